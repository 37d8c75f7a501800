package stack

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// ReplacePlanSchema names the JSON shape of a ReplacePlan.
const ReplacePlanSchema = "diskprep/replace-plan/v1"

// ReplacePlan is a new disk taking the place of an md array's missing or
// failed member: the disk partitioned like the members that remain (one
// RAID partition of their size), then added to the array, which rebuilds
// onto it. The array's mdadm.conf line names it by UUID and stays as it is.
type ReplacePlan struct {
	Schema string `json:"schema"`
	// Array is the array as named (/dev/md/data), Kernel its device
	// (/dev/md127).
	Array  string `json:"array"`
	Kernel string `json:"kernel"`
	// Name is the array's own name (data of host:data).
	Name  string `json:"name"`
	Level string `json:"level"`
	// Missing are the member slots with no working device.
	Missing int `json:"missing"`
	// Like is the remaining member the new one is made like.
	Like string `json:"like"`
	// Disk partitions the new disk; its one partition is layer.Member. Nil
	// when layer.Member is in the array already (a rerun while it rebuilds).
	Disk   *disk.Plan `json:"disk"`
	Member string     `json:"member"`
	// Remove drops the members md marked faulty (a disk that died and is
	// still listed) before the add; nil when none.
	Remove []string `json:"remove,omitempty"`
	// Add is the mdadm argv that adds layer.Member; nil when it is already in
	// the array (a rerun while it rebuilds).
	Add []string `json:"add,omitempty"`
}

// redundant are the levels that survive a lost member.
var redundant = map[string]bool{"raid1": true, "raid4": true, "raid5": true, "raid6": true, "raid10": true}

// PlanReplace plans newDisk taking the place of the missing or failed
// members of the array named by ref (/dev/md/NAME, /dev/mdN), from the
// facts. The new disk goes through the same guard as any disk prepare
// takes (not the system's, not in use, empty unless wipe), and must hold
// a partition as large as the remaining members'.
func (pl Planner) PlanReplace(ref, newDisk string, wipe bool, host *hwinfo.Host) (*ReplacePlan, error) {
	// The array named through a link another user made or could replace
	// (/tmp/md -> another array) is refused, as every device argument is.
	kernel, err := disk.FollowUserPath(pl.HostOrLive(), "replace in", ref, ref)
	if disk.IsRefusal(err) {
		return nil, err
	}
	if err != nil {
		kernel = ref
	}
	a := host.Array(filepath.Base(kernel))
	if a == nil {
		return nil, disk.Usagef("%s is not an md array (diskprep inventory lists them)", ref)
	}
	name := a.ArrayName
	if i := strings.LastIndex(name, ":"); i >= 0 {
		name = name[i+1:] // host:data
	}
	if name == "" {
		name = a.Name
	}
	rp := &ReplacePlan{Schema: ReplacePlanSchema, Array: ref, Kernel: "/dev/" + a.Name, Name: name, Level: a.Level, Missing: a.MissingDevices}
	switch {
	case a.Level == "" || a.State == "inactive":
		// Its members were not all found when it was assembled (a disk
		// gone at boot): md keeps it stopped until told to run degraded.
		return nil, disk.Refuse(ref, fmt.Sprintf("%s is not running (inactive: not all its members were there when it was assembled): start it degraded with mdadm --run %s, then replace again", ref, rp.Kernel))
	case !redundant[a.Level]:
		return nil, disk.Refuse(ref, fmt.Sprintf("%s is %s: it keeps no copy of a lost member to rebuild from", ref, orDash(a.Level)))
	case !a.Degraded && a.Sync == nil:
		return nil, disk.Refuse(ref, fmt.Sprintf("%s has every member working (%d of %d): nothing to replace", ref, a.RaidDisks, a.RaidDisks))
	}
	var like *hwinfo.Partition
	for _, m := range a.Members {
		if m.Role != "active" {
			continue
		}
		_, p := host.Device(m.Device)
		if p == nil {
			return nil, disk.Refuse(ref, fmt.Sprintf("the member %s is a whole disk: diskprep replaces members that are partitions, as it makes them", m.Device))
		}
		if like == nil {
			like = p
		}
	}
	if like == nil {
		return nil, disk.Refuse(ref, fmt.Sprintf("%s has no working member left to rebuild from", ref))
	}
	rp.Like = like.Path
	if d, _ := host.Device(newDisk); d != nil {
		for _, p := range d.Partitions {
			for _, m := range a.Members {
				switch {
				case m.Device != p.Name:
				case m.Role == "active":
					return nil, disk.Refuse(newDisk, fmt.Sprintf("%s already holds %s, a working member of %s", newDisk, p.Name, ref))
				default:
					rp.Member = p.Path // added by an earlier run: it rebuilds
					return rp, nil
				}
			}
		}
	}
	req := disk.Request{Device: newDisk, Wipe: wipe, Origin: "replace " + ref,
		Partitions: []disk.PartSpec{{SizeBytes: like.SizeBytes, Use: "raid:" + name}}}
	p, err := pl.PlanDisk(req, host)
	if err != nil {
		return nil, err
	}
	rp.Disk, rp.Member = p, p.Partitions[0].Path
	for _, m := range a.Members {
		if m.Role == "faulty" {
			rp.Remove = []string{"mdadm", "--manage", rp.Kernel, "--remove", "failed"}
		}
	}
	rp.Add = []string{"mdadm", "--manage", rp.Kernel, "--add", rp.Member}
	return rp, nil
}

func orDash(s string) string {
	if s == "" {
		return "not running"
	}
	return s
}

// ReplaceResult is what ApplyReplace did.
type ReplaceResult struct {
	Disk   *disk.Result `json:"disk"`
	Member string       `json:"member"`
	Added  bool         `json:"added"`
	// Rebuilt: the array was seen whole again before ApplyReplace
	// returned; false when not waited for.
	Rebuilt bool `json:"rebuilt"`
}

// ApplyReplace partitions the new disk, checks its partition holds
// nothing, adds it to the array and, with wait, follows the rebuild to
// its end, a progress line every few seconds to progress. Ctrl-C stops the
// waiting, not the rebuild (the kernel carries it on).
func ApplyReplace(ctx context.Context, rp *ReplacePlan, deps disk.Deps, wait bool) (*ReplaceResult, error) {
	res := &ReplaceResult{Member: rp.Member}
	if rp.Disk != nil {
		r, err := disk.Apply(ctx, rp.Disk, deps)
		res.Disk = r
		if err != nil {
			return res, err
		}
	}
	a := newApplier(deps)
	if rp.Remove != nil {
		if err := a.Do(ctx, "remove the failed members", rp.Remove); err != nil {
			return res, fmt.Errorf("remove the failed members of %s: %w", rp.Array, err)
		}
	}
	if rp.Add != nil {
		if err := a.CheckMembersFree([]string{rp.Member}, "raid:"+rp.Name); err != nil {
			return res, err
		}
		if err := a.Do(ctx, "add to the md array", rp.Add); err != nil {
			return res, fmt.Errorf("add %s to %s: %w", rp.Member, rp.Array, err)
		}
		res.Added = true
	}
	if !wait {
		return res, nil
	}
	err := waitRebuilt(ctx, a, filepath.Base(rp.Kernel))
	res.Rebuilt = err == nil
	return res, err
}

// waitRebuilt follows md's recovery of the array md (kernel name) until
// no slot is missing and no sync runs.
func waitRebuilt(ctx context.Context, a *applier, md string) error {
	sys := a.Roots().SysPath("block/" + md + "/md")
	read := func(f string) string {
		b, _ := a.Host().ReadFile(sys + "/" + f)
		return strings.TrimSpace(string(b))
	}
	start, last := time.Now(), time.Time{}
	for {
		degraded, action := read("degraded"), read("sync_action")
		if (degraded == "0" || degraded == "") && (action == "idle" || action == "") {
			a.Progressf("%s rebuilt in %s", md, time.Since(start).Round(time.Second))
			return nil
		}
		if time.Since(last) >= 5*time.Second {
			last = time.Now()
			a.Progressf("%s", rebuildLine(md, action, read("sync_completed"), read("sync_speed")))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for %s (the kernel goes on rebuilding it; cat /proc/mdstat): %w", md, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// rebuildLine is one progress line from md's sync_completed ("done /
// total" sectors, or "none") and sync_speed (KiB/s).
func rebuildLine(md, action, completed, speed string) string {
	done, total, ok := strings.Cut(completed, " / ")
	d, _ := strconv.ParseUint(strings.TrimSpace(done), 10, 64)
	t, _ := strconv.ParseUint(strings.TrimSpace(total), 10, 64)
	if !ok || t == 0 {
		return fmt.Sprintf("%s: %s pending", md, orDash(action))
	}
	s := fmt.Sprintf("%s: %s %.1f%% (%s of %s)", md, action, 100*float64(d)/float64(t), units.FormatSize(d*512), units.FormatSize(t*512))
	if kib, err := strconv.ParseUint(speed, 10, 64); err == nil && kib > 0 {
		left := time.Duration(float64((t-d)*512) / float64(kib*1024) * float64(time.Second))
		s += fmt.Sprintf(", %s/s, about %s left", units.FormatSize(kib*1024), left.Round(time.Second))
	}
	return s
}

// WriteText renders the plan for people: the array, what the new disk
// gets, and the add.
func (rp *ReplacePlan) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "Replace in %s (%s, %s): %d member slot(s) without a working device\n", rp.Array, rp.Kernel, rp.Level, rp.Missing)
	fmt.Fprintf(w, "  the new member is made like %s\n", rp.Like)
	if rp.Disk != nil {
		if err := rp.Disk.WriteText(w); err != nil {
			return err
		}
	}
	if rp.Add == nil {
		_, err := fmt.Fprintf(w, "  %s is in %s already: it rebuilds\n", rp.Member, rp.Array)
		return err
	}
	if rp.Remove != nil {
		fmt.Fprintf(w, "  then: %s\n", disk.QuoteArgv(rp.Remove))
	}
	_, err := fmt.Fprintf(w, "  then: %s (the array rebuilds onto it; its mdadm.conf line, by UUID, stays)\n", disk.QuoteArgv(rp.Add))
	return err
}
