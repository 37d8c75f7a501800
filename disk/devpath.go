package disk

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

type pathState struct {
	Block    bool
	Resolved string // symlinks followed
}

func statDevicePath(path string) (pathState, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return pathState{}, err
	}
	r, err := filepath.EvalSymlinks(path)
	if err != nil {
		r = path
	}
	return pathState{Block: st.Mode&unix.S_IFMT == unix.S_IFBLK, Resolved: r}, nil
}
