package disk

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/diskprep/diskprep/hwinfo"
)

type pathState struct {
	Block    bool
	Resolved string // symlinks followed
}

// statDevicePath reports what a device argument is on h's machine; a path
// through another user's link is refused (FollowUserPath) before anything
// is read of what it names.
func statDevicePath(h Host, path string) (pathState, error) {
	real, err := FollowUserPath(h, "", path, path)
	if err != nil {
		if IsRefusal(err) {
			return pathState{}, err
		}
		real = path
	}
	if _, err := h.Stat(path); err != nil {
		return pathState{}, err
	}
	_, _, derr := h.DeviceNumber(path)
	return pathState{Block: derr == nil, Resolved: real}, nil
}

// FollowUserPath is path, one the user gave (a device, a release target,
// an image's directory), with its links followed by
// hwinfo.FollowTrustedLinks, the one rule for every command: a link
// another user made or could replace is refused, naming it and its owner,
// as a refusal to verb subject ("" is prepare). Other errors (a part
// missing) are FollowTrustedLinks', for the caller's own stat to report.
func FollowUserPath(h Host, verb, subject, path string) (string, error) {
	real, err := hwinfo.FollowTrustedLinks(h, path)
	var le *hwinfo.LinkError
	if errors.As(err, &le) {
		return "", &refusal{verb: verb, subject: subject, reasons: []string{le.Error()}}
	}
	return real, err
}

// IsRefusal says whether err is the guard's refusal.
func IsRefusal(err error) bool {
	var r *refusal
	return errors.As(err, &r)
}

// owner is the file's owner and permission bits, where the Host says.
func owner(fi fs.FileInfo) (uid uint32, perm fs.FileMode, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, fi.Mode().Perm(), true
}
