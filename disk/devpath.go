package disk

type pathState struct {
	Block    bool
	Resolved string // symlinks followed
}

// statDevicePath reports what a device argument is on h's machine.
func statDevicePath(h Host, path string) (pathState, error) {
	if _, err := h.Stat(path); err != nil {
		return pathState{}, err
	}
	_, _, derr := h.DeviceNumber(path)
	r, err := h.EvalSymlinks(path)
	if err != nil {
		r = path
	}
	return pathState{Block: derr == nil, Resolved: r}, nil
}
