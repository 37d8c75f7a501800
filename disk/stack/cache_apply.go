package stack

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/diskprep/diskprep/disk"
)

// CacheResult is one cached volume after ApplyStacks.
type CacheResult struct {
	Name         string `json:"name"`
	Kind         string `json:"kind"`
	Mode         string `json:"mode"`
	OriginDevice string `json:"origin_device"`
	CacheDevice  string `json:"cache_device"`
	OriginBytes  uint64 `json:"origin_bytes"`
	CacheBytes   uint64 `json:"cache_bytes"`
	// Device is the cached volume's path (/dev/data/data, /dev/bcache0),
	// Node its kernel name (dm-2, bcache0).
	Device  string `json:"device"`
	Node    string `json:"node,omitempty"`
	SetUUID string `json:"set_uuid,omitempty"`
	// Steps are the steps done by this run, as typed; none when the cache
	// existed as asked.
	Steps []string `json:"steps,omitempty"`
	// LVMVersion is lvm version's first line (lvm kinds).
	LVMVersion string       `json:"lvm_version,omitempty"`
	Risk       string       `json:"risk,omitempty"`
	Volume     VolumeResult `json:"volume"`
	// Done: built (or found built) to the end, its file system mounted
	// and persisted as asked; false when a step failed.
	Done bool `json:"done"`
}

// needCachePrograms checks, before anything changes, that the tools the
// caches' steps run are installed.
func (a *applier) needCachePrograms(ctx context.Context, sp *StackPlan, need func(prog, pkg string, args ...string) error) error {
	for _, cp := range sp.Caches {
		if lvmKind(cp.Kind) {
			if err := need("lvm", "lvm2", "version"); err != nil {
				return err
			}
		}
		for _, st := range cp.Steps {
			if len(st.Argv) == 0 || st.Argv[0] != "make-bcache" {
				continue
			}
			// make-bcache has no version flag and exits 1 on -h: only
			// a program that cannot be run is missing.
			if _, err := a.host.Run(ctx, "make-bcache", "-h"); err != nil && isNotFound(err) {
				return fmt.Errorf("make-bcache is not installed: install the bcache-tools package: %w", disk.ErrMissingProgram)
			}
			break
		}
	}
	return nil
}

// applyCache carries out one cache plan: its steps, then the file system
// on the cached volume.
func (a *applier) applyCache(ctx context.Context, cp CachePlan, versions map[string]string, volume func(VolumePlan) (VolumeResult, error)) (CacheResult, error) {
	cr := CacheResult{Name: cp.Name, Kind: cp.Kind, Mode: cp.Mode, OriginDevice: cp.OriginDevice, CacheDevice: cp.CacheDevice,
		OriginBytes: cp.OriginBytes, CacheBytes: cp.CacheBytes, Device: cp.Device, SetUUID: cp.SetUUID, Risk: cp.Risk}
	if lvmKind(cp.Kind) {
		cr.LVMVersion = versions["lvm"]
	}
	node := ""
	if cp.Device != BcachePlaceholder && cp.Kind == CacheKindBcache {
		node = filepath.Base(cp.Device)
	}
	bind := func(argv []string) ([]string, error) {
		if argv == nil {
			return nil, nil
		}
		out := make([]string, len(argv))
		for i, s := range argv {
			if strings.Contains(s, BcachePlaceholder) && node == "" {
				var err error
				if node, err = a.bcacheNode(ctx, cp.OriginDevice); err != nil {
					return nil, err
				}
			}
			out[i] = strings.ReplaceAll(s, BcachePlaceholder, a.roots.DevPath(node))
		}
		return out, nil
	}
	for _, st := range cp.Steps {
		if err := ctx.Err(); err != nil {
			return cr, err
		}
		if st.Member != "" {
			use := "origin:" + cp.Name
			if st.Member == cp.CacheDevice {
				use = "cache:" + cp.Name
			}
			if err := a.CheckMembersFree([]string{st.Member}, use); err != nil {
				return cr, err
			}
		}
		if st.Wait != "" {
			if err := a.waitPath(ctx, st.Wait); err != nil {
				return cr, fmt.Errorf("%s: %w", st.What, err)
			}
		}
		if st.Argv != nil {
			argv, err := bind(st.Argv)
			if err != nil {
				return cr, err
			}
			if err := a.Do(ctx, st.What, argv); err != nil {
				return cr, fmt.Errorf("%s %s: %w", st.What, cp.Name, err)
			}
			cr.Steps = append(cr.Steps, disk.QuoteArgv(argv))
			continue
		}
		if err := a.waitPath(ctx, st.Path); err != nil {
			return cr, fmt.Errorf("%s: %w", st.What, err)
		}
		if err := a.writeSys(st.What, st.Path, st.Value); err != nil {
			return cr, fmt.Errorf("%s %s: %w", st.What, cp.Name, err)
		}
		cr.Steps = append(cr.Steps, st.String())
	}
	v := cp.Volume
	if cp.Kind == CacheKindBcache {
		if node == "" {
			var err error
			if node, err = a.bcacheNode(ctx, cp.OriginDevice); err != nil {
				return cr, err
			}
		}
		dev := a.roots.DevPath(node)
		cr.Device, cr.Node = dev, node
		v.Device = dev
		v.Mkfs, _ = bind(v.Mkfs)
		v.MountArgv, _ = bind(v.MountArgv)
		if _, err := a.waitStackNode(ctx, dev); err != nil {
			return cr, err
		}
		if v.Mkfs != nil && !mkfsForced(v.Mkfs) {
			// Planned over a backing device not registered yet: what
			// shows on the new device now is checked before mkfs.
			if sigs, err := a.ProbeDevice(dev); err != nil {
				return cr, err
			} else if len(sigs) > 0 {
				return cr, disk.Refuse(dev, fmt.Sprintf("%s holds a %s signature since planning", dev, sigs[0].Type))
			}
		}
	} else {
		n, err := a.waitStackNode(ctx, cp.Device)
		if err != nil {
			return cr, err
		}
		cr.Node = n
	}
	var err error
	cr.Volume, err = volume(v)
	cr.Done = err == nil
	return cr, err
}

func mkfsForced(argv []string) bool { return len(argv) > 1 && (argv[1] == "-f" || argv[1] == "-F") }

// writeSys writes one kernel attribute, logged as a step.
func (a *applier) writeSys(what, path, value string) error {
	a.log.Info(what+": started", "path", path, "value", value)
	if err := a.host.WriteSys(path, value); err != nil {
		a.log.Info(what+": failed", "path", path, "value", value, "err", err)
		return fmt.Errorf("echo %s > %s: %w", value, path, err)
	}
	a.log.Info(what+": finished", "path", path)
	return nil
}

// waitPath waits for the kernel to make path (a registered bcache
// device's attributes, a cache set's directory), after udev has handled
// what the last step started.
func (a *applier) waitPath(ctx context.Context, path string) error {
	if _, err := a.host.Stat(path); err == nil {
		return nil
	}
	if a.UdevRunning() {
		// Cut short by an interruption, it is no news: the last line says so.
		if out, err := a.host.Run(ctx, "udevadm", "settle", "--timeout=30"); err != nil && ctx.Err() == nil {
			a.log.Warn("udevadm settle failed", "err", err, "output", string(out))
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := a.host.Stat(path)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// bcacheNode is the kernel name of the bcache device over the backing
// device origin (its bcache/dev link), waited for.
func (a *applier) bcacheNode(ctx context.Context, origin string) (string, error) {
	link := a.roots.SysPath("class/block", filepath.Base(origin), "bcache", "dev")
	if err := a.waitPath(ctx, link); err != nil {
		return "", fmt.Errorf("the bcache device over %s: %w", origin, err)
	}
	target, err := a.host.Readlink(link)
	if err != nil {
		return "", fmt.Errorf("the bcache device over %s: %w", origin, err)
	}
	return filepath.Base(target), nil
}
