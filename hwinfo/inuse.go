package hwinfo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// UseKind is one way a block device can be in use.
type UseKind string

// The ways a device is in use.
const (
	UseMounted UseKind = "mounted" // it (or a holder on it) is mounted
	UseSwap    UseKind = "swap"    // it (or a holder on it) is active swap
	UseHeld    UseKind = "held"    // a holder (LVM, md, dm-crypt, multipath) is stacked on it
	UseLocked  UseKind = "locked"  // another diskprep holds its device lock
	UseOpen    UseKind = "open"    // the kernel refused an exclusive open (someone has it claimed)
)

// Use is one reason a disk or partition must not be written. This file is
// the one in-use check of diskprep: disk refuses to prepare, and bench to
// write, a device for any of these reasons.
type Use struct {
	Device string  // kernel name of the disk or partition in use: sdb1
	Kind   UseKind //
	Point  string  // UseMounted: the mount point
	// Source is, for the live checks, the mount source or swap area as the
	// kernel lists it (/dev/sdb1), or the node that was opened; empty in
	// uses taken from an inventory.
	Source string
	// Via is the holder a mount or swap comes through: "dm-0 (cl-root)", or
	// a chain "dm-0 (luks-1) -> dm-1 (vg-lv)"; empty when direct.
	Via string
	// Holder is the stacked device of UseHeld.
	Holder *Holder
	PID    string // UseLocked: the holder of the lock, when known
}

// String says the reason in one line, as prepare's refusals do.
func (u Use) String() string {
	via := ""
	if u.Via != "" {
		via = " via " + u.Via
	}
	switch u.Kind {
	case UseMounted:
		return fmt.Sprintf("%s is mounted at %s%s", u.Device, u.Point, via)
	case UseSwap:
		return fmt.Sprintf("%s is in use as swap%s", u.Device, via)
	case UseHeld:
		kind := u.Holder.Kind
		if kind == "" {
			kind = "holder"
		}
		return fmt.Sprintf("%s is held by %s %s", u.Device, kind, holderLabel(*u.Holder))
	case UseLocked:
		pid := u.PID
		if pid == "" {
			pid = "unknown"
		}
		return fmt.Sprintf("%s is locked by another diskprep (pid %s)", u.Device, pid)
	case UseOpen:
		return fmt.Sprintf("%s is in use (exclusive open refused)", u.Device)
	}
	return fmt.Sprintf("%s is in use (%s)", u.Device, u.Kind)
}

// Uses lists, from the inventory, why the disk or one of its partitions is
// in use: for the disk and then each partition, its mounts (direct and
// through holders), swap, and each holder with the mounts and swap of what
// is stacked on it, followed down the stack.
func (d *Disk) Uses() []Use {
	var out []Use
	add := func(name string, ms []Mount, swap bool, hs []Holder) {
		for _, m := range ms {
			out = append(out, Use{Device: name, Kind: UseMounted, Point: m.Point, Via: m.Via})
		}
		if swap {
			out = append(out, Use{Device: name, Kind: UseSwap})
		}
		for i := range hs {
			out = append(out, holderUses(name, &hs[i], true)...)
		}
	}
	add(d.Name, d.Mounts, d.Swap, d.Holders)
	for _, p := range d.Partitions {
		add(p.Name, p.Mounts, p.Swap, p.Holders)
	}
	return out
}

// Uses is Disk.Uses for one partition.
func (p *Partition) Uses() []Use {
	d := Disk{Name: p.Name, Mounts: p.Mounts, Swap: p.Swap, Holders: p.Holders}
	return d.Uses()
}

// holderUses is the holder itself (top of the stack on name only) and the
// mounts and swap of it and of everything stacked on it.
func holderUses(name string, h *Holder, top bool) []Use {
	var out []Use
	if top {
		out = append(out, Use{Device: name, Kind: UseHeld, Holder: h})
	}
	label := holderLabel(*h)
	for _, m := range h.Mounts {
		out = append(out, Use{Device: name, Kind: UseMounted, Point: m.Point, Via: label})
	}
	if h.Swap {
		out = append(out, Use{Device: name, Kind: UseSwap, Via: label})
	}
	for i := range h.Holders {
		out = append(out, holderUses(name, &h.Holders[i], false)...)
	}
	return out
}

// LiveUses checks the live machine, not an inventory that may be stale, for
// why the block device name (major:minor majmin, node path) must not be
// written: a holder on it or on one of its partitions (sysfs), a mount of
// any of them (mountinfo, by device number or by path), swap on one
// (proc/swaps), another diskprep holding its device lock (proc/locks).
// Only when none of these is found does it try an exclusive open of path,
// since that claims the device for an instant. With name empty, only the
// exclusive open is tried.
func (r Roots) LiveUses(name, majmin, path string) []Use {
	var out []Use
	if name != "" {
		// The device and, for a whole disk, its partitions (subdirectories
		// with a dev file).
		names := map[string]string{}
		if majmin != "" {
			names[majmin] = name
		}
		order := []string{name}
		sys := r.SysPath("class/block", name)
		des, _ := os.ReadDir(sys)
		for _, de := range des {
			if b, err := os.ReadFile(filepath.Join(sys, de.Name(), "dev")); err == nil {
				names[strings.TrimSpace(string(b))] = de.Name()
				order = append(order, de.Name())
			}
		}
		sort.Strings(order[1:])
		for _, n := range order {
			dir := sys
			if n != name {
				dir = filepath.Join(sys, n)
			}
			hs, _ := os.ReadDir(filepath.Join(dir, "holders"))
			for _, h := range hs {
				out = append(out, Use{Device: n, Kind: UseHeld, Holder: &Holder{Name: h.Name()}})
			}
		}
		mounts, _ := r.Mounts()
		for _, m := range mounts {
			if n, ok := names[m.MajMin]; ok || m.Source == path {
				if !ok {
					n = name
				}
				out = append(out, Use{Device: n, Kind: UseMounted, Point: m.Point, Source: m.Source})
			}
		}
		swaps, _ := r.Swaps()
		for _, sw := range swaps {
			base := filepath.Base(sw.Path)
			for _, n := range order {
				if base == n {
					out = append(out, Use{Device: n, Kind: UseSwap, Source: sw.Path})
				}
			}
		}
		if majmin != "" {
			if pid, held := r.LockHeld(r.DeviceLockPath(majmin)); held {
				out = append(out, Use{Device: name, Kind: UseLocked, PID: pid})
			}
		}
	}
	if len(out) > 0 || path == "" {
		return out
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			dev := name
			if dev == "" {
				dev = path
			}
			out = append(out, Use{Device: dev, Kind: UseOpen, Source: path})
		}
		return out
	}
	unix.Close(fd)
	return out
}
