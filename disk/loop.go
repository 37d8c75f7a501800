package disk

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/diskprep/diskprep/internal/atomicfile"
	"golang.org/x/sys/unix"
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

func writeLoopState(runDir string, st loopState) error {
	path := loopStatePath(runDir, st.Device)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}

// attachingPath names the record, written just before attaching image,
// that diskprep means to attach it: a run killed between the attach and
// writing the device's record leaves a loop device only this names.
func attachingPath(runDir, image string) string {
	sum := sha256.Sum256([]byte(image))
	return filepath.Join(runDir, "loops", "attaching-"+hex.EncodeToString(sum[:8])+".json")
}

func writeAttaching(runDir, image string) error {
	path := attachingPath(runDir, image)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(loopState{Image: image, AttachedAt: time.Now().UTC().Format(time.RFC3339), PID: os.Getpid()})
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}

// readLoopState returns the record for dev if diskprep attached it and it
// still backs the same image. A device without a record whose image
// diskprep was attaching when it died is adopted: the record is written
// now, so that release detaches it.
func readLoopState(runDir, sysDir, dev string) (*loopState, error) {
	b, err := os.ReadFile(loopStatePath(runDir, dev))
	if errors.Is(err, os.ErrNotExist) {
		image := loopBackingFile(sysDir, filepath.Base(dev))
		if image == "" {
			return nil, err
		}
		if _, aerr := os.Stat(attachingPath(runDir, image)); aerr != nil {
			return nil, err
		}
		st := loopState{Device: dev, Image: image, AttachedAt: time.Now().UTC().Format(time.RFC3339), PID: os.Getpid()}
		if err := writeLoopState(runDir, st); err != nil {
			return nil, err
		}
		os.Remove(attachingPath(runDir, image))
		return &st, nil
	}
	if err != nil {
		return nil, err
	}
	var st loopState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("loop state %s: %w", loopStatePath(runDir, dev), err)
	}
	if bf := loopBackingFile(sysDir, filepath.Base(dev)); bf != st.Image {
		// Detached and reused by someone else since: not ours any more.
		return nil, os.ErrNotExist
	}
	return &st, nil
}

func loopBackingFile(sysDir, name string) string {
	b, err := os.ReadFile(filepath.Join(sysDir, "block", name, "loop", "backing_file"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// attachLoop attaches image to a free loop device with partition scanning
// and without autoclear (the device must outlive this process), directly
// with ioctls: LOOP_CONFIGURE, or LOOP_SET_FD + LOOP_SET_STATUS64 on kernels
// before 5.8.
func attachLoop(devDir, image string, sector uint64) (string, error) {
	backing, err := os.OpenFile(image, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("attach %s: %w", image, err)
	}
	defer backing.Close()
	ctl, err := os.OpenFile(filepath.Join(devDir, "loop-control"), os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("attach %s: %w", image, err)
	}
	defer ctl.Close()
	var lastErr error
	// Another process may take the free device between GET_FREE and
	// CONFIGURE: that is EBUSY, and a retry gets the next one.
	for attempt := 0; attempt < 10; attempt++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", fmt.Errorf("attach %s: find a free loop device: %w", image, err)
		}
		dev := filepath.Join(devDir, fmt.Sprintf("loop%d", n))
		lf, err := openLoopNode(dev, n)
		if err != nil {
			return "", fmt.Errorf("attach %s: %w", image, err)
		}
		err = configureLoop(lf, backing, image, sector)
		lf.Close()
		if err == nil {
			return dev, nil
		}
		lastErr = err
		if !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	return "", fmt.Errorf("attach %s: %w", image, lastErr)
}

// openLoopNode opens /dev/loopN, waiting briefly for devtmpfs or udev.
func openLoopNode(dev string, n int) (*os.File, error) {
	for i := 0; ; i++ {
		f, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err == nil || !errors.Is(err, os.ErrNotExist) || i >= 100 {
			if err != nil && errors.Is(err, os.ErrNotExist) {
				if merr := unix.Mknod(dev, unix.S_IFBLK|0o660, int(unix.Mkdev(7, uint32(n)))); merr == nil {
					return os.OpenFile(dev, os.O_RDWR, 0)
				}
			}
			return f, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loopConfigure is false in tests of the pre-5.8 path.
var loopConfigure = true

func configureLoop(lf, backing *os.File, image string, sector uint64) error {
	var info unix.LoopInfo64
	info.Flags = unix.LO_FLAGS_PARTSCAN
	copy(info.File_name[:len(info.File_name)-1], image)
	cfg := unix.LoopConfig{Fd: uint32(backing.Fd()), Info: info}
	if sector != 512 {
		cfg.Size = uint32(sector) // the kernel's block_size field
	}
	var err error = unix.ENOTTY
	if loopConfigure {
		err = unix.IoctlLoopConfigure(int(lf.Fd()), &cfg)
	}
	if err == nil || errors.Is(err, unix.EBUSY) {
		return err
	}
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTTY) {
		return fmt.Errorf("LOOP_CONFIGURE: %w", err)
	}
	// Kernels before 5.8 (CentOS 7 and 8) know only the two-step attach.
	if err := unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_SET_FD, int(backing.Fd())); err != nil {
		return fmt.Errorf("LOOP_SET_FD: %w", err)
	}
	if err := unix.IoctlLoopSetStatus64(int(lf.Fd()), &info); err != nil {
		unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_CLR_FD, 0)
		return fmt.Errorf("LOOP_SET_STATUS64: %w", err)
	}
	if sector != 512 {
		if err := unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_SET_BLOCK_SIZE, int(sector)); err != nil {
			unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_CLR_FD, 0)
			return fmt.Errorf("LOOP_SET_BLOCK_SIZE %d: %w", sector, err)
		}
	}
	return nil
}

// detachLoop drops the partitions the kernel has for dev and detaches it.
func detachLoop(sysDir, dev string) error {
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	defer f.Close()
	parts, _ := kernelPartitions(sysDir, filepath.Base(dev))
	for _, kp := range parts {
		if err := blkpg(f.Fd(), unix.BLKPG_DEL_PARTITION, int32(kp.number), 0, 0); err != nil {
			return fmt.Errorf("detach %s: remove partition %s: %w", dev, kp.name, err)
		}
	}
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err != nil {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	return nil
}
