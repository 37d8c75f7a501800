package hwinfo

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/jaypipes/ghw"
)

// blockState is what one Read learns once and every disk consults.
type blockState struct {
	ghwDisks map[string]*ghw.Disk // nil until a disk asks (ghwDisk)
	mounts   map[string][]Mount   // by "major:minor"
	swaps    map[string]bool      // by kernel name (sda2, dm-1)
	byID     map[string][]string
	byPath   map[string][]string
	prober   *prober
}

// ghwDisk is what ghw's block reader found of the disk name, read at the
// first call. Its reader re-reads all of /proc/self/mounts for every
// partition (thousands of lines on a container host) for mount facts we
// take from mountinfo once: it is hidden from it.
func (st *blockState) ghwDisk(r *reader, name string) *ghw.Disk {
	if st.ghwDisks == nil {
		st.ghwDisks = map[string]*ghw.Disk{}
		if bi, err := ghw.Block(r.ghwArgs("/proc")...); err == nil {
			for _, d := range bi.Disks {
				st.ghwDisks[d.Name] = d
			}
		} else {
			r.log.Debug("ghw block", "err", err)
		}
	}
	return st.ghwDisks[name]
}

func (r *reader) readDisks(ctx context.Context, h *Host) []Disk {
	entries, err := os.ReadDir(r.path("/sys/block"))
	if err != nil {
		r.warn("disks unknown: read %s: %v", r.rel("/sys/block"), unwrapPath(err))
		return nil
	}
	st := &blockState{}
	st.mounts = r.readMountinfo()
	st.swaps = r.readSwaps()
	st.byID = r.linkIndex("/dev/disk/by-id")
	st.byPath = r.linkIndex("/dev/disk/by-path")
	st.prober = r.newProber()

	var disks []Disk
	var pend []pending
	for _, e := range entries {
		if ctx.Err() != nil {
			return nil
		}
		name := e.Name()
		if r.isHolderDevice(name) || !r.all && r.unusedByName(name) {
			continue
		}
		d, pd := r.readDisk(name, st, h)
		if !r.all && hiddenByDefault(&d, pd.sizeKnown) {
			continue
		}
		disks = append(disks, d)
		pend = append(pend, pd)
	}
	st.prober.fillAll(ctx, r, disks, pend)
	for i := range disks {
		r.finishDisk(&disks[i], pend[i], st)
	}
	sort.Slice(disks, func(i, j int) bool { return naturalLess(disks[i].Name, disks[j].Name) })
	r.readCrypt(disks)
	r.readStacks(h, disks, st)
	return disks
}

// readStacks fills the md arrays and LVM volume groups built on the disks.
func (r *reader) readStacks(h *Host, disks []Disk, st *blockState) {
	diskOf := map[string]string{}
	sizes := map[string]uint64{}
	var candidates []string // devices that may be LVM PVs
	for _, d := range disks {
		diskOf[d.Name], sizes[d.Name] = d.Name, d.SizeBytes
		if d.FSType == "LVM2_member" {
			candidates = append(candidates, d.Name)
		}
		for _, p := range d.Partitions {
			diskOf[p.Name], sizes[p.Name] = d.Name, p.SizeBytes
			if p.FSType == "LVM2_member" {
				candidates = append(candidates, p.Name)
			}
		}
	}
	h.Arrays = r.readArrays(st, diskOf)
	for _, a := range h.Arrays {
		sizes[a.Name] = a.SizeBytes
		if a.FSType == "LVM2_member" {
			candidates = append(candidates, a.Name)
		}
	}
	// PVs on other dm devices (LVM on dm-crypt) say so in udev.
	entries, _ := os.ReadDir(r.path("/sys/block"))
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "dm-") {
			continue
		}
		majmin, _ := r.readString("/sys/block/" + name + "/dev")
		if r.udevData(majmin)["ID_FS_TYPE"] == "LVM2_member" {
			candidates = append(candidates, name)
			if n, ok := r.readUint("/sys/block/" + name + "/size"); ok {
				sizes[name] = n * 512
			}
		}
	}
	h.VolumeGroups = r.readVolumeGroups(st, candidates, sizes, diskOf)
	h.Caches = r.readCaches(st)
}

// pending carries what finishDisk needs from readDisk.
type pending struct {
	sizeKnown bool
	noUdev    bool
	majmin    string
}

// isHolderDevice tells device-mapper and MD devices apart: they are listed
// under the disks they stack on, not as disks. bcache devices are listed
// both ways: one is used like a disk (a filesystem straight on bcache0), so
// it has a row of its own, virtual, with what it is built on. Hidden devices (the per-path
// nvme0c0n1 of native NVMe multipath) are never listed either: their
// namespace, nvme0n1, is.
func (r *reader) isHolderDevice(name string) bool {
	if strings.HasPrefix(name, "dm-") || r.exists("/sys/block/"+name+"/dm") {
		return true
	}
	if strings.HasPrefix(name, "nvme") && r.readBool("/sys/block/"+name+"/hidden") {
		return true
	}
	return strings.HasPrefix(name, "md") && r.exists("/sys/block/"+name+"/md")
}

// unusedByName skips, before reading a dozen attributes of each, the
// devices hidden by default that a name and one file identify.
func (r *reader) unusedByName(name string) bool {
	switch {
	case strings.HasPrefix(name, "loop"):
		return !r.exists("/sys/block/" + name + "/loop/backing_file")
	case strings.HasPrefix(name, "zram"), strings.HasPrefix(name, "ram"), strings.HasPrefix(name, "sr"):
		return true
	}
	return false
}

// hiddenByDefault: a device whose size could not be read is shown, with
// its warning; one that says it is empty (card reader, idle nbd) is not.
func hiddenByDefault(d *Disk, sizeKnown bool) bool {
	switch {
	case d.Transport == "loop":
		return d.LoopBackingFile == ""
	case d.Transport == "zram", d.Transport == "ram":
		return true
	case strings.HasPrefix(d.Name, "sr"):
		return true
	}
	return sizeKnown && d.SizeBytes == 0
}

// readDisk reads what sysfs and udev say about one disk and its partitions.
// Signatures and the use made of it (mounts, holders) come after, in
// fillAll and finishDisk.
func (r *reader) readDisk(name string, st *blockState, h *Host) (Disk, pending) {
	sys := "/sys/block/" + name
	d := Disk{Name: name, Path: "/dev/" + name}
	devPath := sys
	if target, err := os.Readlink(r.path(sys)); err == nil {
		if filepath.IsAbs(target) {
			devPath = filepath.Clean(target)
		} else {
			devPath = filepath.Join("/sys/block", target)
		}
	}
	n, sizeKnown := r.readUint(sys + "/size")
	if sizeKnown {
		d.SizeBytes = n * 512 // sysfs counts 512-byte units whatever the sector size
	} else if !r.exists(sys + "/size") {
		r.warn("%s: size unknown: %s missing", name, r.rel(sys+"/size"))
	}
	d.LogicalSectorBytes, _ = r.readUint(sys + "/queue/logical_block_size")
	d.PhysicalSectorBytes, _ = r.readUint(sys + "/queue/physical_block_size")
	d.MinIOBytes, _ = r.readUint(sys + "/queue/minimum_io_size")
	d.OptimalIOBytes, _ = r.readUint(sys + "/queue/optimal_io_size")
	d.Rotational = r.readBool(sys + "/queue/rotational")
	d.Removable = r.readBool(sys + "/removable")
	d.ReadOnly = r.readBool(sys + "/ro")
	majmin, _ := r.readString(sys + "/dev")
	udev := r.udevData(majmin)

	// Bus, media and identity come from sysfs and udev here, not from
	// ghw's Disk, because ghw guesses them: its StorageController is read
	// from the name (every sd* is SCSI: SATA, SAS and USB look alike), its
	// DriveType is HDD for every sd* and vd* whose queue/rotational is 1,
	// the kernel's default for a device that said nothing, and its Model is
	// udev's ID_MODEL alone (with underscores), so none without udev. What
	// ghw has is used where ours is empty (diskIdentity).
	sysVendor, _ := r.readAttrString(sys + "/device/vendor")
	d.Transport = r.transport(name, devPath, udev, sysVendor)
	r.diskIdentity(&d, sys, devPath, sysVendor, udev, func() *ghw.Disk { return st.ghwDisk(r, name) })
	rate := r.rotationRate(&d, sys, udev)
	if rate >= minRotationRPM {
		d.RotationRPM = uint32(rate)
	}
	d.Media = media(&d, rate)
	d.Virtual, d.VirtualBy = virtualDisk(&d, h.Virt.Hypervisor)
	if d.Transport == "bcache" {
		d.StackedOn = r.bcacheLowers(sys)
	}

	if d.Transport == "loop" {
		d.LoopBackingFile, _ = r.readString(sys + "/loop/backing_file")
	}
	d.ByID = st.byID[name]
	d.ByPath = st.byPath[name]

	d.PartitionTable = udev["ID_PART_TABLE_TYPE"]
	d.PartitionTableID = udev["ID_PART_TABLE_UUID"]
	if udev["ID_FS_USAGE"] != "" || udev["ID_FS_TYPE"] != "" {
		d.FSType, d.FSLabel, d.FSUUID = udev["ID_FS_TYPE"], udevString(udev, "ID_FS_LABEL"), udev["ID_FS_UUID"]
	}
	d.Partitions = r.readPartitions(name, st)
	return d, pending{sizeKnown: sizeKnown, noUdev: len(udev) == 0, majmin: majmin}
}

// finishDisk adds mounts, swap and holders, the filesystem type the kernel
// knows when nothing else said, and the system mark.
func (r *reader) finishDisk(d *Disk, pd pending, st *blockState) {
	sys := "/sys/block/" + d.Name
	d.Mounts = append(d.Mounts, st.mounts[pd.majmin]...)
	d.Swap = st.swaps[d.Name]
	d.Holders = r.readHolders(sys, st, 0)
	stackedUse(&d.Mounts, &d.Swap, d.Holders, "")
	for i := range d.Partitions {
		p := &d.Partitions[i]
		p.FSType = fallbackFSType(p.FSType, p.Mounts, directSwapOf(p.Swap, p.Holders))
	}
	d.FSType = fallbackFSType(d.FSType, d.Mounts, directSwapOf(d.Swap, d.Holders))
	markSystem(d)
}

// fallbackFSType uses what the kernel says is on a device when neither udev
// nor a signature did: the type it is mounted with, or swap.
func fallbackFSType(fs string, mounts []Mount, swap bool) string {
	if fs != "" {
		return fs
	}
	for _, m := range mounts {
		if m.Via == "" {
			return m.FSType
		}
	}
	if swap {
		return "swap"
	}
	return ""
}

func (r *reader) readPartitions(disk string, st *blockState) []Partition {
	sys := "/sys/block/" + disk
	entries, err := os.ReadDir(r.path(sys))
	if err != nil {
		return nil
	}
	var parts []Partition
	for _, e := range entries {
		pname := e.Name()
		psys := sys + "/" + pname
		if !r.exists(psys + "/partition") {
			continue
		}
		p := Partition{Name: pname, Path: "/dev/" + pname}
		if n, ok := r.readUint(psys + "/partition"); ok {
			p.Number = int(n)
		}
		if n, ok := r.readUint(psys + "/start"); ok {
			p.StartBytes = n * 512
		}
		if n, ok := r.readUint(psys + "/size"); ok {
			p.SizeBytes = n * 512
		}
		p.ReadOnly = r.readBool(psys + "/ro")
		majmin, _ := r.readString(psys + "/dev")
		u := r.udevData(majmin)
		p.FSType = u["ID_FS_TYPE"]
		p.FSLabel = udevString(u, "ID_FS_LABEL")
		p.FSUUID = u["ID_FS_UUID"]
		p.PartUUID = u["ID_PART_ENTRY_UUID"]
		p.PartLabel = decodeHexEscapes(u["ID_PART_ENTRY_NAME"]) // blkid-encoded, no _ENC twin
		p.PartType = u["ID_PART_ENTRY_TYPE"]
		p.Mounts = append(p.Mounts, st.mounts[majmin]...)
		p.Swap = st.swaps[pname]
		p.Holders = r.readHolders(psys, st, 0)
		stackedUse(&p.Mounts, &p.Swap, p.Holders, "")
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].Number != parts[j].Number {
			return parts[i].Number < parts[j].Number
		}
		return naturalLess(parts[i].Name, parts[j].Name)
	})
	return parts
}

// transport names the bus from the device's place in the sysfs tree, which
// the kernel always has, then from udev's ID_BUS, which it may not.
func (r *reader) transport(name, devPath string, udev map[string]string, sysVendor string) string {
	p := devPath + "/"
	has := func(s string) bool { return strings.Contains(p, s) }
	switch {
	case strings.HasPrefix(name, "loop"):
		return "loop"
	case strings.HasPrefix(name, "zram"):
		return "zram"
	case strings.HasPrefix(name, "ram"):
		return "ram"
	case isBcache(name):
		return "bcache"
	case has("/nvme/") || strings.HasPrefix(name, "nvme"):
		return "nvme"
	case has("/usb"):
		return "usb"
	case strings.HasPrefix(name, "vd") || has("/virtio") && !has("/host"):
		return "virtio"
	case has("/mmc_host/") || strings.HasPrefix(name, "mmcblk"):
		return "mmc"
	case has("/ata"):
		return "sata"
	case has("/end_device-") || has("/sas_"):
		return "sas"
	case strings.HasPrefix(name, "xvd") || has("/vbd-"):
		return "xen"
	}
	if host := scsiHost(p); host != "" && r.exists("/sys/class/sas_host/"+host) {
		return "sas"
	}
	switch udev["ID_BUS"] {
	case "ata":
		return "sata"
	case "usb":
		return "usb"
	case "nvme":
		return "nvme"
	}
	if has("/host") && has("/target") {
		// SCSI vendor "ATA" is written by a SCSI-ATA translation layer:
		// the disk behind this SCSI host (a raw-mapped disk, say) is SATA.
		if strings.TrimSpace(sysVendor) == "ATA" {
			return "sata"
		}
		return "scsi"
	}
	if udev["ID_BUS"] == "scsi" {
		return "scsi"
	}
	return "other"
}

// scsiHost returns "host2" from ".../host2/target2:0:1/...".
func scsiHost(p string) string {
	for _, el := range strings.Split(p, "/") {
		if strings.HasPrefix(el, "host") {
			if _, err := strconv.Atoi(el[4:]); err == nil {
				return el
			}
		}
	}
	return ""
}

// Nominal media rotation rates, as ATA IDENTIFY word 217 and SCSI VPD page
// 0xb1 both encode them: 0 not reported, 1 non-rotating (solid state),
// 0x401-0xfffe the rate in rpm, anything else reserved.
const (
	rotationNotReported = 0
	rotationNone        = 1
	minRotationRPM      = 0x401
	maxRotationRPM      = 0xfffe
)

// rotationRate is what the disk itself says about its medium: udev's
// ID_ATA_ROTATION_RATE_RPM (IDENTIFY word 217, with ata_id's 0 for
// non-rotating), else the MEDIUM ROTATION RATE of VPD page 0xb1 (which
// libata also builds for SATA disks), else word 217 of VPD page 0x89.
func (r *reader) rotationRate(d *Disk, sys string, udev map[string]string) uint16 {
	switch d.Transport {
	case "nvme", "loop", "zram", "ram", "virtio":
		return rotationNotReported // no such field, or none we can read here
	}
	if v, ok := udev["ID_ATA_ROTATION_RATE_RPM"]; ok {
		if n, err := strconv.ParseUint(v, 10, 16); err == nil {
			if n == 0 {
				return rotationNone
			}
			return validRotation(uint16(n))
		}
	}
	if b, ok := r.readAttr(sys + "/device/vpd_pgb1"); ok {
		if rate := vpdRotationRate(b); rate != rotationNotReported {
			return rate
		}
	}
	if b, ok := r.readAttr(sys + "/device/vpd_pg89"); ok {
		if _, words, ok := parseVPD89(b); ok && b[56] == 0xec {
			return validRotation(words[217])
		}
	}
	return rotationNotReported
}

// vpdRotationRate reads the MEDIUM ROTATION RATE of the Block Device
// Characteristics VPD page (SBC-4 6.6.2, bytes 4-5).
func vpdRotationRate(b []byte) uint16 {
	if len(b) < 6 || b[1] != 0xb1 {
		return rotationNotReported
	}
	return validRotation(binary.BigEndian.Uint16(b[4:6]))
}

func validRotation(v uint16) uint16 {
	if v == rotationNone || v >= minRotationRPM && v <= maxRotationRPM {
		return v
	}
	return rotationNotReported
}

// media names what the data sits on. The kernel's queue/rotational is not
// enough for that: it is 1 by default, for any device that does not say
// otherwise (virtio-blk never does; a SCSI disk does only through VPD page
// 0xb1), so "rotational" with nothing reporting a rotation rate is unknown,
// not a hard disk. It is 0 only when something said the medium does not
// turn, which makes an SSD.
func media(d *Disk, rate uint16) string {
	switch d.Transport {
	case "loop", "zram", "ram", "bcache":
		return "" // what they sit on has the media
	case "nvme":
		return "nvme"
	}
	switch {
	case strings.HasPrefix(d.Name, "sr"):
		return ""
	case rate == rotationNone:
		return "ssd"
	case rate >= minRotationRPM:
		return "hdd"
	case !d.Rotational:
		return "ssd"
	}
	return ""
}

// diskIdentity fills vendor, model, serial, firmware and WWN: udev first (it
// has the full ATA model and the serial), then the kernel's own attributes,
// then whatever ghw found.
func (r *reader) diskIdentity(d *Disk, sys, devPath, sysVendor string, udev map[string]string, ghwDisk func() *ghw.Disk) {
	d.Vendor = udevString(udev, "ID_VENDOR")
	d.Model = udevString(udev, "ID_MODEL")
	// scsi_id takes the page 0x83 designator (the WWN) as ID_SERIAL_SHORT of
	// a SCSI disk that has one; ID_SCSI_SERIAL is its unit serial number
	// (page 0x80), which lsblk and udisks show too.
	d.Serial = firstNonEmpty(udev["ID_SCSI_SERIAL"], udev["ID_SERIAL_SHORT"])
	d.Firmware = udev["ID_REVISION"]
	d.WWN = firstNonEmpty(udev["ID_WWN_WITH_EXTENSION"], udev["ID_WWN"])

	fill := func(dst *string, p string) {
		if *dst == "" {
			*dst, _ = r.readAttrString(p)
		}
	}
	switch {
	case d.Transport == "virtio" && strings.EqualFold(sysVendor, "0x1af4"):
		// virtio-blk has no model of its own; 0x1af4 is the virtio vendor id.
		if d.Vendor == "" {
			d.Vendor = "Virtio"
		}
		if d.Model == "" {
			d.Model = "Virtio Block Device"
		}
		fill(&d.Serial, sys+"/serial")
	case d.Transport == "nvme":
		fill(&d.Model, sys+"/device/model")
		fill(&d.Serial, sys+"/device/serial")
		fill(&d.Firmware, sys+"/device/firmware_rev")
		fill(&d.WWN, sys+"/wwid")
	case d.Transport == "mmc":
		fill(&d.Model, sys+"/device/name")
		fill(&d.Serial, sys+"/device/serial")
	default:
		if d.Vendor == "" {
			d.Vendor = sysVendor
		}
		wwid, ok := r.readAttrString(sys + "/device/wwid")
		if !ok {
			wwid, _ = r.readAttrString(sys + "/wwid")
		}
		// Without udev, sysfs device/model is the 16-byte INQUIRY product
		// field, which cuts an ATA model short (and rev keeps 4 of the 8
		// firmware characters): the disk's own IDENTIFY data, in VPD page
		// 0x89, has them whole, and the wwid of a disk without a WWN has
		// the whole model too.
		if b, ok := r.readAttr(sys + "/device/vpd_pg89"); ok {
			if id, _, ok := parseVPD89(b); ok {
				fillFrom(&d.Model, id.Model)
				fillFrom(&d.Firmware, id.Firmware)
				fillFrom(&d.Serial, id.Serial)
				fillFrom(&d.WWN, id.WWN)
			}
		}
		if model, serial, ok := ataFromWWID(wwid); ok {
			fillFrom(&d.Model, model)
			fillFrom(&d.Serial, serial)
		}
		fill(&d.Model, sys+"/device/model")
		fill(&d.Firmware, sys+"/device/rev")
		if d.Serial == "" {
			d.Serial = r.vpdSerial(sys + "/device/vpd_pg80")
		}
		if d.Serial == "" && d.Transport == "usb" {
			d.Serial = r.usbSerial(devPath)
		}
		fillFrom(&d.WWN, wwnFromWWID(wwid))
	}
	// ghw reads the same udev data and sysfs files, and a few keys more
	// (sg3_utils' SCSI_IDENT_SERIAL, ID_SERIAL, DM_WWN): its scan of every
	// disk (a third of inventory's time) is made only for a disk it can
	// tell more of.
	ghwKnowsMore := d.Serial == "" && (udev["SCSI_IDENT_SERIAL"] != "" || udev["ID_SERIAL"] != "") ||
		d.WWN == "" && udev["DM_WWN"] != "" || d.Vendor == "" && sysVendor != ""
	var gd *ghw.Disk
	if ghwKnowsMore {
		gd = ghwDisk()
	}
	if gd != nil {
		if d.Vendor == "" {
			d.Vendor = known(gd.Vendor)
		}
		if d.Model == "" {
			d.Model = strings.ReplaceAll(known(gd.Model), "_", " ")
		}
		if d.Serial == "" {
			d.Serial = known(gd.SerialNumber)
		}
		if d.WWN == "" {
			d.WWN = known(gd.WWN)
		}
	}
}

// usbSerial is the serial string of the USB device a disk sits on, which
// udev's usb_id gives as ID_SERIAL_SHORT: Linux reads no VPD pages from USB
// storage, so without udev nothing else has it. The USB device is the
// nearest parent of the disk's device path with an idVendor.
func (r *reader) usbSerial(devPath string) string {
	for p := filepath.Dir(devPath); strings.HasPrefix(p, "/sys/devices/"); p = filepath.Dir(p) {
		if r.exists(p + "/idVendor") {
			s, _ := r.readAttrString(p + "/serial")
			return s
		}
	}
	return ""
}

// fillFrom sets an empty field.
func fillFrom(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

// vpdSerial decodes the Unit Serial Number VPD page (SPC-4 7.8.15): a
// 4-byte header whose byte 3 is the length, then ASCII.
func (r *reader) vpdSerial(p string) string {
	b, ok := r.readAttr(p)
	if !ok || len(b) < 4 || b[1] != 0x80 {
		return ""
	}
	n := int(b[3])
	if 4+n > len(b) {
		n = len(b) - 4
	}
	return strings.TrimSpace(strings.Trim(string(b[4:4+n]), "\x00"))
}

// wwnFromWWID turns the kernel's SCSI wwid into udev's ID_WWN form. Only NAA
// and EUI identifiers are world-wide names; a T10 vendor id is not.
func wwnFromWWID(w string) string {
	switch {
	case strings.HasPrefix(w, "naa."):
		return "0x" + strings.ToLower(w[4:])
	case strings.HasPrefix(w, "eui."):
		return w
	}
	return ""
}

// qemuHWVersion is the revision QEMU's emulated IDE, AHCI, SCSI and USB
// disks report (QEMU_HW_VERSION, for every machine type since 2.5), also
// when they were given a model, vendor and serial of their own.
const qemuHWVersion = "2.5+"

// virtualDisk spots a hypervisor's emulated disk by the identity strings
// each hypervisor gives its disks. A physical model seen inside a VM (raw
// device mapping, passthrough) matches none and stays physical: QEMU's
// scsi-block and vfio pass the disk's own revision through.
func virtualDisk(d *Disk, hypervisor string) (bool, string) {
	v, m := strings.ToLower(d.Vendor), strings.ToLower(d.Model)
	switch {
	case d.Transport == "virtio":
		if hypervisor != "" && hypervisor != "none" && hypervisor != "other" {
			return true, hypervisor
		}
		return true, "qemu"
	case d.Transport == "xen":
		return true, "xen"
	case d.Transport == "bcache":
		return true, "" // the kernel's, over the disks in StackedOn
	case v == "vmware" || strings.HasPrefix(m, "vmware virtual") || v == "vmware," || strings.HasPrefix(v, "vmware") && strings.Contains(m, "virtual"):
		return true, "vmware"
	case v == "qemu" || strings.HasPrefix(m, "qemu "):
		return true, "qemu"
	case v == "msft" && strings.Contains(m, "virtual disk"):
		return true, "hyperv"
	case v == "vbox" || strings.HasPrefix(m, "vbox "):
		return true, "virtualbox"
	case strings.Contains(m, "amazon elastic block store"):
		return true, "kvm"
	case v == "google" && strings.Contains(m, "persistentdisk"):
		return true, "kvm"
	case d.Firmware == qemuHWVersion && d.Transport != "nvme" && qemuCanEmulate(hypervisor):
		return true, "qemu"
	}
	return false, ""
}

// qemuCanEmulate: QEMU's disks appear on a KVM or QEMU guest, or one whose
// hypervisor is not known; not on bare metal or under another hypervisor.
func qemuCanEmulate(hypervisor string) bool {
	switch hypervisor {
	case "kvm", "qemu", "other", "":
		return true
	}
	return false
}

// udevData reads the udev database record of a device, or nil.
func (r *reader) udevData(majmin string) map[string]string {
	if majmin == "" {
		return nil
	}
	b, err := r.readFile("/run/udev/data/b" + majmin)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.warn("read udev record b%s: %v", majmin, unwrapPath(err))
		}
		return nil
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if kv, ok := strings.CutPrefix(line, "E:"); ok {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = v
			}
		}
	}
	return m
}

// udevString prefers KEY_ENC, which keeps the device's own spaces (KEY has
// them turned into underscores), and falls back to KEY.
func udevString(u map[string]string, key string) string {
	if enc, ok := u[key+"_ENC"]; ok && enc != "" {
		return strings.TrimSpace(decodeHexEscapes(enc))
	}
	return strings.TrimSpace(u[key])
}

// decodeHexEscapes undoes udev's \xHH encoding.
func decodeHexEscapes(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if n, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// linkIndex maps a device name to the symlinks in dir that point at it,
// as full /dev/disk/... paths.
func (r *reader) linkIndex(dir string) map[string][]string {
	idx := map[string][]string{}
	entries, err := os.ReadDir(r.path(dir))
	if err != nil {
		return idx
	}
	for _, e := range entries {
		target, err := os.Readlink(r.path(dir + "/" + e.Name()))
		if err != nil {
			continue
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		name := filepath.Base(target)
		idx[name] = append(idx[name], dir+"/"+e.Name())
	}
	for k := range idx {
		sort.Strings(idx[k])
	}
	return idx
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// naturalLess compares digit runs as numbers: sda2 < sda10, nvme2n1 < nvme10n1.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		ad, bd := isDigit(a[0]), isDigit(b[0])
		switch {
		case ad && bd:
			na, ra := splitDigits(a)
			nb, rb := splitDigits(b)
			ia, _ := strconv.ParseUint(na, 10, 64)
			ib, _ := strconv.ParseUint(nb, 10, 64)
			if ia != ib {
				return ia < ib
			}
			a, b = ra, rb
		case ad != bd:
			return ad
		default:
			if a[0] != b[0] {
				return a[0] < b[0]
			}
			a, b = a[1:], b[1:]
		}
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func splitDigits(s string) (string, string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i], s[i:]
}
