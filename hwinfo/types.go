package hwinfo

import "strings"

// Schema names the JSON shape of an inventory document.
const Schema = "diskprep/inventory/v1"

// Host is everything diskprep knows about one machine: its identity and its
// disks. It is what `diskprep inventory` prints and what every result record
// embeds. Units are in the field names; an empty string or zero means
// "not known", never a guess.
type Host struct {
	Schema   string         `json:"schema"`
	Hostname string         `json:"hostname"`
	OS       OS             `json:"os"`
	Kernel   string         `json:"kernel"`
	CPU      CPU            `json:"cpu"`
	Memory   Memory         `json:"memory"`
	Board    Board          `json:"board"`
	System   SystemProduct  `json:"system"`
	BIOS     BIOS           `json:"bios"`
	Virt     Virtualization `json:"virtualization"`
	Disks    []Disk         `json:"disks"`
	// Arrays are the md RAID arrays, VolumeGroups the LVM volume groups
	// and Caches the cached volumes built on the disks (stacktypes.go).
	Arrays       []Array        `json:"arrays,omitempty"`
	VolumeGroups []VolumeGroup  `json:"volume_groups,omitempty"`
	Caches       []CachedVolume `json:"caches,omitempty"`
	// Warnings lists facts that could not be read (unreadable or malformed
	// files under the root); the matching fields are left empty.
	Warnings []string `json:"warnings,omitempty"`
}

// OS identifies the installed distribution.
type OS struct {
	ID            string `json:"id"`             // os-release ID: centos, rocky, debian
	Name          string `json:"name"`           // os-release NAME
	Version       string `json:"version"`        // os-release VERSION_ID
	PrettyName    string `json:"pretty_name"`    // os-release PRETTY_NAME
	RedHatRelease string `json:"redhat_release"` // /etc/redhat-release, which carries the minor release on CentOS 7 ("7.3.1611")
}

// CPU is the processor package(s).
type CPU struct {
	Model   string `json:"model"`
	Vendor  string `json:"vendor"`
	Sockets int    `json:"sockets"`
	Cores   int    `json:"cores"`   // physical cores, all sockets
	Threads int    `json:"threads"` // logical CPUs, all sockets
	// AES says whether the CPU has AES instructions (x86's AES-NI, the
	// "aes" flag; arm64's "aes" feature), which set what dm-crypt's
	// AES costs; nil when /proc/cpuinfo does not list its features.
	AES *bool `json:"aes,omitempty"`
}

// Memory is installed or usable RAM.
type Memory struct {
	TotalBytes uint64 `json:"total_bytes"` // usable, from /proc/meminfo MemTotal
}

// Board is the mainboard from DMI.
type Board struct {
	Vendor  string `json:"vendor"`
	Model   string `json:"model"`
	Version string `json:"version"`
}

// SystemProduct is the DMI system (chassis product), e.g. "VMware Virtual Platform".
type SystemProduct struct {
	Vendor  string `json:"vendor"`
	Product string `json:"product"`
	Version string `json:"version"`
}

// BIOS is the firmware from DMI.
type BIOS struct {
	Vendor  string `json:"vendor"`
	Version string `json:"version"`
	Date    string `json:"date"`
}

// Virtualization says whether this host is a VM guest and/or a container.
type Virtualization struct {
	// Hypervisor is "none", "vmware", "kvm", "qemu", "hyperv", "xen",
	// "virtualbox", "parallels", "bhyve", "other" or "" when unknown.
	Hypervisor string `json:"hypervisor"`
	// Container is "none", "docker", "podman", "lxc", "systemd-nspawn", "other".
	Container string `json:"container"`
	// Evidence names where the hypervisor verdict came from ("dmi sys_vendor=VMware, Inc.").
	Evidence string `json:"evidence,omitempty"`
}

// Disk is one whole block device.
type Disk struct {
	Name string `json:"name"` // sda, nvme0n1, vdb, loop3
	Path string `json:"path"` // /dev/sda
	// ByID and ByPath are the udev symlinks naming the whole disk, as full
	// paths (/dev/disk/by-id/ata-TOSHIBA_DT01ACA300_Z3GK...), sorted.
	ByID   []string `json:"by_id,omitempty"`
	ByPath []string `json:"by_path,omitempty"`

	SizeBytes           uint64 `json:"size_bytes"`
	LogicalSectorBytes  uint64 `json:"logical_sector_bytes"`
	PhysicalSectorBytes uint64 `json:"physical_sector_bytes"`
	MinIOBytes          uint64 `json:"min_io_bytes,omitempty"`
	OptimalIOBytes      uint64 `json:"optimal_io_bytes,omitempty"`

	// Transport: nvme, sata, sas, scsi, usb, virtio, mmc, loop, zram, ram,
	// xen, bcache (a stacked device, see StackedOn), other.
	Transport string `json:"transport"`
	// Media is hdd, ssd or nvme, "" when not known: loop, zram and ram
	// devices, and disks that report no rotation rate (virtio-blk, most
	// SCSI disks of a hypervisor), whatever Rotational says.
	Media string `json:"media"`
	// Rotational is the kernel's queue/rotational flag, which is set for
	// every device that did not say it is solid state.
	Rotational bool `json:"rotational"`
	// RotationRPM is the nominal rotation rate a hard disk reports (ATA
	// IDENTIFY word 217, SCSI VPD page 0xb1), 0 when it reports none.
	RotationRPM uint32 `json:"rotation_rate_rpm,omitempty"`

	Vendor   string `json:"vendor"`
	Model    string `json:"model"`
	Serial   string `json:"serial"`
	Firmware string `json:"firmware"`
	WWN      string `json:"wwn"`

	// Virtual is true for a hypervisor's emulated disk (VMware "Virtual disk",
	// QEMU HARDDISK, virtio, Hyper-V "Virtual Disk", VBOX HARDDISK) and for a
	// device the kernel stacks on other disks (bcache, VirtualBy empty);
	// false for a physical disk, including one passed through or raw-mapped
	// to a guest.
	Virtual   bool   `json:"virtual"`
	VirtualBy string `json:"virtual_by,omitempty"` // hypervisor that emulates it: vmware, qemu, hyperv, virtualbox, xen

	Removable bool `json:"removable"`
	ReadOnly  bool `json:"read_only"`

	// PartitionTable is "gpt", "dos" or "" (none found).
	PartitionTable   string `json:"partition_table,omitempty"`
	PartitionTableID string `json:"partition_table_id,omitempty"` // GPT disk GUID or MBR disk signature

	// Filesystem (or other signature) directly on the whole disk, no table.
	FSType  string `json:"fs_type,omitempty"`
	FSLabel string `json:"fs_label,omitempty"`
	FSUUID  string `json:"fs_uuid,omitempty"`

	// Mounts, Swap and Holders are about the whole-disk device (a
	// filesystem or PV without a partition table); partitions have their
	// own. Mounts include those of holders, with Via set; Swap is true when
	// the device or a holder on it is active swap.
	Mounts     []Mount     `json:"mounts,omitempty"`
	Swap       bool        `json:"swap"`
	Holders    []Holder    `json:"holders,omitempty"`
	Partitions []Partition `json:"partitions,omitempty"`

	// Crypt is the LUKS volume on the whole disk (FSType crypto_LUKS).
	Crypt *Crypt `json:"crypt,omitempty"`

	// StackedOn names the devices a stacked device is built on: for bcache,
	// the backing device, then the caches of its cache set. Each of them
	// lists this device among its Holders.
	StackedOn []string `json:"stacked_on,omitempty"`

	// LoopBackingFile is the image behind a loop device.
	LoopBackingFile string `json:"loop_backing_file,omitempty"`

	// System marks a disk that holds /, /boot, /boot/efi, /usr, /var or
	// active swap, directly or through holders (LVM, MD, dm-crypt). prepare
	// refuses it.
	System        bool     `json:"system"`
	SystemReasons []string `json:"system_reasons,omitempty"` // e.g. "/ on nvme0n1p2 via dm-0 (cl-root)"
}

// Partition is one partition of a disk.
type Partition struct {
	Name       string `json:"name"` // sda1, nvme0n1p2
	Path       string `json:"path"`
	Number     int    `json:"number"`
	StartBytes uint64 `json:"start_bytes"`
	SizeBytes  uint64 `json:"size_bytes"`
	ReadOnly   bool   `json:"read_only"`

	FSType    string `json:"fs_type,omitempty"` // xfs, ext4, swap, LVM2_member, linux_raid_member, crypto_LUKS, vfat ...
	FSLabel   string `json:"fs_label,omitempty"`
	FSUUID    string `json:"fs_uuid,omitempty"`
	PartUUID  string `json:"part_uuid,omitempty"`
	PartLabel string `json:"part_label,omitempty"`
	PartType  string `json:"part_type,omitempty"` // GPT type GUID or MBR type (0x83)

	// Mounts include those of holders stacked on the partition, with Via
	// set; Swap is true when the partition or a holder on it is active swap.
	Mounts  []Mount  `json:"mounts,omitempty"`
	Swap    bool     `json:"swap"`
	Holders []Holder `json:"holders,omitempty"`

	// Crypt is the LUKS volume on the partition (FSType crypto_LUKS).
	Crypt *Crypt `json:"crypt,omitempty"`
}

// Mount is one mount of a device (or of a holder built on it).
type Mount struct {
	Point   string `json:"point"`
	FSType  string `json:"fs_type"`
	Options string `json:"options"`
	Source  string `json:"source"`        // as in mountinfo: /dev/sda1, /dev/mapper/cl-root
	Via     string `json:"via,omitempty"` // holder chain when not direct: "dm-0 (cl-root)", "dm-0 (luks-1) -> dm-1 (vg-lv)"
}

// Holder is a virtual device stacked on a disk or partition.
type Holder struct {
	Name    string   `json:"name"`              // dm-0, md127
	Kind    string   `json:"kind"`              // lvm, md, crypt, multipath, dm, bcache, other
	DMName  string   `json:"dm_name"`           // cl-root (from /sys/block/dm-0/dm/name), md name
	Mounts  []Mount  `json:"mounts,omitempty"`  // its own mounts only (Via empty)
	Swap    bool     `json:"swap"`              // itself active swap
	Holders []Holder `json:"holders,omitempty"` // stacked further (LVM on dm-crypt)
}

// Device returns the disk's partition or the disk itself named by name
// ("sdb1", "/dev/sdb1" or "sdb"), for callers that resolve a user's argument.
func (h *Host) Device(name string) (*Disk, *Partition) {
	for i := range h.Disks {
		d := &h.Disks[i]
		if d.Name == name || d.Path == name {
			return d, nil
		}
		for j := range d.Partitions {
			p := &d.Partitions[j]
			if p.Name == name || p.Path == name {
				return d, p
			}
		}
	}
	return nil, nil
}

// DisplayModel is how people name a disk: the model, with the vendor in
// front unless the model already starts with it or the vendor is only the
// bus ("ATA" is what libata reports for every SATA disk).
func DisplayModel(vendor, model string) string {
	vendor, model = strings.TrimSpace(vendor), strings.TrimSpace(model)
	switch {
	case vendor == "" || vendor == "ATA":
		return model
	case model == "":
		return vendor
	case strings.HasPrefix(strings.ToLower(model), strings.ToLower(vendor)):
		return model
	}
	return vendor + " " + model
}
