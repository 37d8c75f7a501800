package disk

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// loopState is the record that diskprep attached an image, so that release
// detaches only loop devices diskprep made.
type loopState struct {
	Device     string `json:"device"`
	Image      string `json:"image"`
	AttachedAt string `json:"attached_at"`
	PID        int    `json:"pid"`
}

func loopStatePath(runDir, dev string) string {
	return filepath.Join(runDir, "loops", filepath.Base(dev)+".json")
}

func (a *applier) writeLoopState(st loopState) error {
	path := loopStatePath(a.runDir, st.Device)
	if err := a.host.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	return a.host.WriteFile(path, append(b, '\n'), 0o644)
}

// attachingPath names the record, written just before attaching image,
// that diskprep means to attach it: a run killed between the attach and
// writing the device's record leaves a loop device only this names.
func attachingPath(runDir, image string) string {
	sum := sha256.Sum256([]byte(image))
	return filepath.Join(runDir, "loops", "attaching-"+hex.EncodeToString(sum[:8])+".json")
}

func (a *applier) writeAttaching(image string) error {
	path := attachingPath(a.runDir, image)
	if err := a.host.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(loopState{Image: image, AttachedAt: a.now().UTC().Format(time.RFC3339), PID: os.Getpid()})
	return a.host.WriteFile(path, append(b, '\n'), 0o644)
}

// loopOwned says whether diskprep attached dev and it still backs the same
// image: its record, or a record that diskprep was attaching its image
// when it died (adopt). It only reads.
func (a *applier) loopOwned(dev string) (st *loopState, adopt bool, err error) {
	b, err := a.host.ReadFile(loopStatePath(a.runDir, dev))
	if errors.Is(err, fs.ErrNotExist) {
		image := a.loopBackingFile(filepath.Base(dev))
		if image == "" {
			return nil, false, err
		}
		if _, aerr := a.host.Stat(attachingPath(a.runDir, image)); aerr != nil {
			return nil, false, err
		}
		return &loopState{Device: dev, Image: image, PID: os.Getpid()}, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	var st0 loopState
	if err := json.Unmarshal(b, &st0); err != nil {
		return nil, false, fmt.Errorf("loop state %s: %w", loopStatePath(a.runDir, dev), err)
	}
	if bf := a.loopBackingFile(filepath.Base(dev)); bf != st0.Image {
		// Detached and reused by someone else since: not ours any more.
		return nil, false, fs.ErrNotExist
	}
	return &st0, false, nil
}

// readLoopState returns the record for dev if diskprep attached it and it
// still backs the same image. A device without a record whose image
// diskprep was attaching when it died is adopted: the record is written
// now, so that release detaches it.
func (a *applier) readLoopState(dev string) (*loopState, error) {
	st, adopt, err := a.loopOwned(dev)
	if err != nil || !adopt {
		return st, err
	}
	st.AttachedAt = a.now().UTC().Format(time.RFC3339)
	if err := a.writeLoopState(*st); err != nil {
		return nil, err
	}
	a.host.Remove(attachingPath(a.runDir, st.Image))
	return st, nil
}

func (a *applier) loopBackingFile(name string) string {
	b, err := a.host.ReadFile(a.roots.SysPath("block", name, "loop", "backing_file"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// prepareImage creates and attaches the image as planned and returns the
// loop device.
func (a *applier) prepareImage(p *Plan, res *Result, undo *[]func()) (string, func(), error) {
	im := p.Image
	unlock, err := a.lockImage(im.Path)
	if err != nil {
		return "", nil, err
	}
	fail := func(err error) (string, func(), error) {
		unlock()
		return "", nil, err
	}
	if im.Attach {
		if dev := a.loopFor(im.Path); dev != "" {
			return fail(Refuse(im.Path, fmt.Sprintf("%s was attached to %s since planning", im.Path, dev)))
		}
	}
	switch {
	case im.Create:
		a.log.Info("create image: started", "path", im.Path, "size", im.SizeBytes)
		if err := a.host.CreateImage(im.Path, im.SizeBytes); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fail(Refuse(im.Path, fmt.Sprintf("%s appeared since planning", im.Path)))
			}
			a.host.Remove(im.Path)
			return fail(fmt.Errorf("create image %s: %w", im.Path, err))
		}
		*undo = append(*undo, func() { a.host.Remove(im.Path) })
		a.log.Info("create image: finished", "path", im.Path)
	case im.Recreate:
		a.log.Info("recreate image: started", "path", im.Path, "size", im.SizeBytes)
		if err := a.host.EmptyImage(im.Path, im.SizeBytes); err != nil {
			return fail(fmt.Errorf("recreate image %s: %w", im.Path, err))
		}
		res.Wiped = append(res.Wiped, "image "+im.Path+" recreated empty")
	default:
		fi, err := a.host.Stat(im.Path)
		if err != nil || !fi.Mode().IsRegular() || uint64(fi.Size()) != im.SizeBytes {
			return fail(Refuse(im.Path, fmt.Sprintf("%s changed since planning", im.Path)))
		}
	}
	if !im.Attach {
		if bf := a.loopBackingFile(filepath.Base(p.Device)); bf != im.Path {
			return fail(Refuse(im.Path, fmt.Sprintf("%s no longer backs %s", im.Path, p.Device)))
		}
		// Adopts a device a killed run attached without recording it.
		a.readLoopState(p.Device)
		return p.Device, unlock, nil
	}
	a.log.Info("attach image: started", "path", im.Path, "sector", im.SectorBytes)
	if err := a.writeAttaching(im.Path); err != nil {
		return fail(fmt.Errorf("record attaching %s: %w", im.Path, err))
	}
	defer a.host.Remove(attachingPath(a.runDir, im.Path))
	dev, err := a.host.AttachLoop(im.Path, im.SectorBytes)
	if err != nil {
		a.log.Info("attach image: failed", "path", im.Path, "err", err)
		return fail(err)
	}
	a.log.Info("attach image: finished", "path", im.Path, "device", dev)
	*undo = append(*undo, func() {
		if err := a.host.DetachLoop(dev); err != nil {
			a.log.Error("detach after failure", "device", dev, "err", err)
		}
		a.host.Remove(loopStatePath(a.runDir, dev))
	})
	res.LoopAttached = true
	if err := a.writeLoopState(loopState{Device: dev, Image: im.Path, AttachedAt: a.now().UTC().Format(time.RFC3339), PID: os.Getpid()}); err != nil {
		return fail(fmt.Errorf("record loop device %s: %w", dev, err))
	}
	return dev, unlock, nil
}

// loopFor names the loop device backed by image, "" when none.
func (a *applier) loopFor(image string) string {
	des, _ := a.host.ReadDir(a.roots.SysPath("block"))
	for _, de := range des {
		if strings.HasPrefix(de.Name(), "loop") && a.loopBackingFile(de.Name()) == image {
			return "/dev/" + de.Name()
		}
	}
	return ""
}
