package hwinfo

import (
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// md arrays, from sysfs (Documentation/admin-guide/md.rst): sys/block/mdN/md
// has level, raid_disks, degraded, sync_action, sync_completed, sync_speed,
// and one dev-NAME directory per member with its slot and state; the
// array's name is in the udev database (MD_NAME) or /dev/md; the live
// position of a sync is in proc/mdstat (mdstat.go).

// readArrays lists the md arrays under sys/block, with the disk each
// member is on (diskOf: kernel name -> whole disk).
func (r *reader) readArrays(st *blockState, diskOf map[string]string) []Array {
	entries, err := os.ReadDir(r.path("/sys/block"))
	if err != nil {
		return nil
	}
	names := r.mdNames()
	progress := r.readMdstat()
	var out []Array
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "md") || !r.exists("/sys/block/"+name+"/md") {
			continue
		}
		a := r.readArray(name, st, diskOf, names)
		if p, ok := progress[name]; ok && a.Sync != nil && p.totKiB > 0 {
			// mdstat has the live position; sysfs the last checkpoint.
			a.Sync.DoneBytes, a.Sync.TotalBytes, a.Sync.Percent = p.doneKiB*1024, p.totKiB*1024, p.percent
			if p.speedKiB > 0 {
				a.Sync.SpeedBytesPerS = p.speedKiB * 1024
			}
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i].Name, out[j].Name) })
	return out
}

func (r *reader) readArray(name string, st *blockState, diskOf, names map[string]string) Array {
	sys := "/sys/block/" + name
	md := sys + "/md"
	a := Array{Name: name, Path: "/dev/" + name}
	if n, ok := r.readUint(sys + "/size"); ok {
		a.SizeBytes = n * 512
	}
	a.Level, _ = r.readString(md + "/level")
	a.State, _ = r.readString(md + "/array_state")
	a.Metadata, _ = r.readString(md + "/metadata_version")
	if u, ok := r.readAttrString(md + "/uuid"); ok {
		a.UUID = mdadmUUID(u)
	}
	if n, ok := r.readUint(md + "/raid_disks"); ok {
		a.RaidDisks = int(n)
	}
	if n, ok := r.readUint(md + "/chunk_size"); ok && mdHasChunks(a.Level) {
		a.ChunkBytes = n
	}
	if r.exists(md + "/degraded") {
		if n, ok := r.readUint(md + "/degraded"); ok {
			a.MissingDevices = int(n)
			a.Degraded = n > 0
		}
	}
	a.Sync = r.readArraySync(md)

	majmin, _ := r.readString(sys + "/dev")
	u := r.udevData(majmin)
	a.ArrayName = firstNonEmpty(u["MD_NAME"], u["MD_DEVNAME"], names[name])
	if a.UUID == "" {
		a.UUID = u["MD_UUID"]
	}
	if u["ID_FS_TYPE"] != "" {
		a.FSType, a.FSLabel, a.FSUUID = u["ID_FS_TYPE"], udevString(u, "ID_FS_LABEL"), u["ID_FS_UUID"]
	}
	a.Mounts = append(a.Mounts, st.mounts[majmin]...)
	a.Swap = st.swaps[name]
	a.FSType = fallbackFSType(a.FSType, a.Mounts, a.Swap)
	if a.FSType == "crypto_LUKS" {
		a.Holders = r.readHolders(sys, st, 0)
		a.Crypt = r.cryptOf(a.Path, a.SizeBytes, a.Holders)
	}

	des, _ := os.ReadDir(r.path(md))
	for _, de := range des {
		dev, ok := strings.CutPrefix(de.Name(), "dev-")
		if !ok {
			continue
		}
		p := md + "/" + de.Name()
		if t, err := os.Readlink(r.path(p + "/block")); err == nil {
			dev = baseName(t)
		}
		m := ArrayMember{Device: dev, Disk: diskOf[dev], Slot: -1}
		if s, ok := r.readString(p + "/slot"); ok && s != "none" {
			if n, err := strconv.Atoi(s); err == nil {
				m.Slot = n
			}
		}
		if s, ok := r.readString(p + "/state"); ok && s != "" {
			m.State = strings.Split(s, ",")
		}
		m.Role = memberRole(m)
		a.Members = append(a.Members, m)
	}
	sort.SliceStable(a.Members, func(i, j int) bool {
		mi, mj := a.Members[i], a.Members[j]
		if (mi.Slot < 0) != (mj.Slot < 0) {
			return mj.Slot < 0
		}
		if mi.Slot != mj.Slot {
			return mi.Slot < mj.Slot
		}
		return naturalLess(mi.Device, mj.Device)
	})
	return a
}

// readArraySync reads the running sync action and how far it got:
// sync_completed is "done / total" in sectors, "delayed" while it waits for
// another array on the same disks, or "none".
func (r *reader) readArraySync(md string) *ArraySync {
	action, _ := r.readString(md + "/sync_action")
	if action == "" || action == "idle" {
		return nil
	}
	s := &ArraySync{Action: action}
	if c, ok := r.readString(md + "/sync_completed"); ok {
		if d, t, ok := strings.Cut(c, "/"); ok {
			done, err1 := strconv.ParseUint(strings.TrimSpace(d), 10, 64)
			total, err2 := strconv.ParseUint(strings.TrimSpace(t), 10, 64)
			if err1 == nil && err2 == nil && total > 0 && done <= total {
				s.DoneBytes, s.TotalBytes = done*512, total*512
				s.Percent = math.Floor(float64(done)/float64(total)*1000) / 10
			}
		}
	}
	if v, ok := r.readString(md + "/sync_speed"); ok {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			s.SpeedBytesPerS = n * 1024
		}
	}
	return s
}

// mdNames maps kernel names to the names in /dev/md (mdadm's links, which
// udev makes from the array's name).
func (r *reader) mdNames() map[string]string {
	out := map[string]string{}
	entries, _ := os.ReadDir(r.path("/dev/md"))
	for _, e := range entries {
		if t, err := os.Readlink(r.path("/dev/md/" + e.Name())); err == nil {
			out[baseName(t)] = e.Name()
		}
	}
	return out
}

// mdHasChunks: only striped levels use md's chunk_size (raid1 reports a
// meaningless default).
func mdHasChunks(level string) bool {
	switch level {
	case "raid0", "raid4", "raid5", "raid6", "raid10":
		return true
	}
	return false
}

// memberRole sums up md's member state.
func memberRole(m ArrayMember) string {
	has := func(s string) bool {
		for _, x := range m.State {
			if x == s {
				return true
			}
		}
		return false
	}
	switch {
	case has("faulty"):
		return "faulty"
	case has("replacement"):
		return "replacement"
	case has("spare") || m.Slot < 0:
		return "spare"
	}
	return "active"
}

// mdadmUUID prints md's UUID as mdadm --detail and mdadm.conf do
// (b165d6c9:bf460c03:94853b51:3c11a9a6); sysfs prints it dashed.
func mdadmUUID(s string) string {
	h := strings.ReplaceAll(s, "-", "")
	if len(h) != 32 {
		return s
	}
	return h[0:8] + ":" + h[8:16] + ":" + h[16:24] + ":" + h[24:32]
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
