package engine

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// A failed read or write says where, and names the errno by its symbol as
// well as its text: "input/output error" alone is what a user cannot search.
func TestIOErrorNamesErrno(t *testing.T) {
	for _, tc := range []struct {
		read    bool
		n, want int
		err     error
		msg     string
	}{
		{true, -1, 4096, unix.EIO, "pread at offset 8192: input/output error (EIO)"},
		{false, -1, 4096, unix.ENOSPC, "pwrite at offset 8192: no space left on device (ENOSPC)"},
		{true, 512, 4096, nil, "pread at offset 8192: short transfer 512 of 4096 bytes"},
	} {
		err := ioError(tc.read, 8192, tc.n, tc.want, tc.err)
		if err.Error() != tc.msg {
			t.Errorf("%q, want %q", err, tc.msg)
		}
		if tc.err != nil && !errors.Is(err, tc.err) {
			t.Errorf("%v does not wrap %v", err, tc.err)
		}
	}
}
