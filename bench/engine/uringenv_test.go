package engine

import (
	"errors"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
	"golang.org/x/sys/unix"
)

// requireURing skips t when io_uring cannot be used. A kernel built
// without it (ENOSYS) truly lacks it; anything else (EPERM from a seccomp
// profile or kernel.io_uring_disabled) is a block that, with
// DISKPREP_REQUIRE_PRIVILEGED=1, fails rather than leave io_uring untested.
func requireURing(t *testing.T) {
	t.Helper()
	if err := probeURing(); err != nil {
		testenv.Unavailable(t, "io_uring", errors.Is(err, unix.ENOSYS), err)
	}
}
