package hwinfo

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// Issue 13 item 9: root refused by a container or a device policy is told
// so, not told to run as root; only an unprivileged user is.
func TestOpenAdvice(t *testing.T) {
	wrap := func(errno syscall.Errno) error {
		return fmt.Errorf("open /dev/vda: %w", &fs.PathError{Op: "open", Path: "/dev/vda", Err: errno})
	}
	cases := []struct {
		err        error
		euid       int
		want, nope string
	}{
		{wrap(syscall.EPERM), 0, "cannot be opened here even as root: a container or a device policy", "run as root"},
		{wrap(syscall.EACCES), 0, "even as root", "run as root"},
		{wrap(syscall.EACCES), 1000, "run as root", "policy"},
		{wrap(syscall.EIO), 0, "could not be read", "root"},
	}
	for _, c := range cases {
		got := openAdvice(c.err, c.euid)
		if !strings.Contains(got, c.want) || strings.Contains(got, c.nope) {
			t.Errorf("openAdvice(%v, euid %d) = %q; want %q and not %q", c.err, c.euid, got, c.want, c.nope)
		}
	}
}
