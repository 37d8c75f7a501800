package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/planfile"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

type prepareOptions struct {
	Device string
	// Devices are every DEVICE given: more than one only with Raid or LVM.
	Devices  []string
	Raid     string // --raid LEVEL: an md array over Devices
	RaidName string // --name of the array (default data)
	LVM      string // --lvm VG[/LV:SIZE]: a volume group over Devices
	// Cache is the origin disk of a cached volume (--cache), CacheDevice
	// the fast disk or partition in front of it; CacheMode and CacheKind
	// as stack.CacheSpec.
	Cache         string
	CacheDevice   string
	CacheMode     string
	CacheKind     string
	NoDiscard     bool
	Image         string
	Size          string
	SectorSize    string
	PlanFile      string
	FS            string
	Label         string
	Mount         string
	MountOpts     string
	MkfsOpts      []string
	PartitionSize string
	Persist       bool
	MountOver     bool
	Wipe          bool
	DryRun        bool
	Diff          bool
	Yes           bool
	Shrink        bool // --shrink: an LVM volume asked smaller shrinks (ext4, unmounted)
	// Encrypt puts the file system of the partition, --raid or --lvm on
	// LUKS2, unlocked by KeyFile.
	Encrypt    bool
	KeyFile    string
	Passphrase bool // --passphrase: asked on the terminal instead of KeyFile
	TPM2       bool // --tpm2: a key slot sealed to the TPM unlocks it at boot
}

// appendValue is a repeatable string flag that keeps each value whole:
// urfave's StringSlice splits on commas, which would cut mkfs arguments such
// as "reflink=1,crc=1" apart.
type appendValue struct{ vals []string }

func (v *appendValue) Set(s string) error { v.vals = append(v.vals, s); return nil }
func (v *appendValue) String() string     { return strings.Join(v.vals, " ") }

func prepareCommand() *cli.Command {
	cmd := &cli.Command{
		Name:      "prepare",
		Usage:     "partition (GPT), format (xfs or ext4), mount and persist a data disk",
		ArgsUsage: "DEVICE | --image FILE --size SIZE | --plan FILE",
		Description: `Prepare writes a GPT with one partition spanning the disk (or one of
--partition-size), aligned to 1 MiB (or the disk's physical sector / optimal
I/O size when larger), makes the filesystem, mounts it and, with --persist,
adds an /etc/fstab line by UUID with defaults,nofail.

It refuses (exit 3, nothing written) a disk that holds the system, is
mounted, used as swap or held by LVM/MD/dm-crypt, is read-only, too small,
locked by another diskprep, or carries a partition table or signature (unless
--wipe). It refuses a device or image named through a symbolic link
another user owns or could replace, anywhere on its path
(/tmp/x -> /dev/sdb: give /dev/sdb itself); root's own links, as
/dev/disk/by-id's, are followed. It shows the disk and what would be
destroyed and asks; --yes skips the question, and without a terminal
--yes is required. Running the same prepare again on a disk already
prepared as asked changes nothing.

The mount point is refused (exit 3, nothing written) when it is /, lies in
/etc, /usr, /boot, /bin, /sbin, /lib*, /proc, /sys, /dev or diskprep's own
state and results, is /root, /tmp, /run, /var or one of /var's own
directories (/var/lib, /var/log, /var/tmp ...; a new directory below them,
such as /var/lib/libvirt/images, is fine), leads there by a symbolic link,
is another filesystem's mount point, is not a directory, cannot be created
(under a file, on a read-only filesystem), or is a directory that is not
empty: mounting there would hide its files, which --mount-over allows.
Mount options other than those mount(8) and the filesystem take (bind,
remount, loop and the like), or that cannot be written in an fstab line,
are bad input (exit 2).

--dry-run prints exactly the plan that would be carried out (-o json for the
machine-readable plan, diskprep/plan/v2 for one disk or several alike) and
needs no root when the facts are readable.

--diff reads the disks and says, one line a layer in the order prepare
would take them (image, table, partition, filesystem, mount, fstab, md,
mdadm.conf, pv, vg, lv, cache, luks, crypttab), what it would keep, create, change or
destroy, naming what a destroyed partition holds. It changes nothing and
exits 0 when the disks are already as asked, 1 when something would
change, 3 when the guard would refuse (the lines then show what --wipe
would destroy). -o json: diskprep/plan-diff/v1.

A logical volume asked bigger than it is grows online with its file
system (lvextend --resizefs). Asked smaller, it is refused: xfs cannot
shrink, and an ext4 volume shrinks only with --shrink, unmounted (umount
it first; prepare mounts it again): e2fsck -f -p, resize2fs, then lvreduce.
Below what its file system uses it is refused. A file system smaller than
its volume (lvextend without --resizefs) is grown online to fill it.

Examples:
  diskprep prepare /dev/sdb --fs xfs --label data --mount /data --persist
  diskprep prepare /dev/nvme1n1 --fs ext4 --mkfs-opt=-E --mkfs-opt=lazy_itable_init=0 --dry-run
  diskprep prepare /dev/sdc --fs xfs --wipe --yes --mount /srv --mount-opt noatime
  diskprep prepare --image /var/tmp/scratch.img --size 10G --fs xfs --mount /mnt/scratch
  diskprep prepare --plan bootstrap.yaml --dry-run
  diskprep prepare --plan bootstrap.yaml --diff   # exit 0: nothing to do
  diskprep prepare /dev/sdb /dev/sdc --raid 1 --fs xfs --mount /data --persist
  diskprep prepare /dev/sdb /dev/sdc --lvm fast/scratch:100G --fs ext4 --mount /scratch
  diskprep prepare /dev/sdb --fs xfs --mount /srv/vault --persist --encrypt --key-file /etc/diskprep/keys/vault.key
  diskprep prepare /dev/sdb /dev/sdc --raid 1 --fs xfs --mount /data --persist --encrypt --key-file /etc/diskprep/keys/data.key
  diskprep prepare /dev/sdc --fs ext4 --mount /home2 --persist --encrypt --passphrase   # asked on the terminal
  diskprep prepare /dev/sdb /dev/sdc --lvm fast/scratch:60G --fs ext4 --mount /scratch --shrink
  diskprep prepare --cache /dev/sdb --cache-device /dev/nvme0n1p3 --fs xfs --mount /srv --persist
  diskprep release /data                     # unmount, drop the fstab line`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "fs", Usage: "filesystem: `xfs` or ext4"},
			&cli.StringFlag{Name: "label", Usage: "GPT partition name and filesystem `LABEL` (xfs <= 12, ext4 <= 16 bytes)"},
			&cli.StringFlag{Name: "mount", Usage: "mount the filesystem at `DIR` (created if missing; never a system directory)"},
			&cli.StringFlag{Name: "mount-opt", Usage: "mount `OPTIONS`, comma separated (noatime,discard): those mount(8) and the filesystem take"},
			&cli.BoolFlag{Name: "mount-over", Usage: "mount even over a --mount DIR that is not empty, hiding what it holds while mounted"},
			&cli.GenericFlag{Name: "mkfs-opt", Value: &appendValue{}, Usage: "extra mkfs `ARG`, repeatable, passed as given (--mkfs-opt=-m --mkfs-opt=reflink=1)"},
			&cli.BoolFlag{Name: "persist", Usage: "add an /etc/fstab line (by UUID, defaults,nofail); needs --mount"},
			&cli.StringFlag{Name: "partition-size", Usage: "make the partition `SIZE` (100G) or a share of the disk (50%) instead of the whole disk"},
			&cli.BoolFlag{Name: "wipe", Usage: "destroy existing partition tables and signatures (as wipefs -a) first"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print the plan and change nothing"},
			&cli.BoolFlag{Name: "diff", Usage: "print, layer by layer, what would be kept, created, changed or destroyed, and change nothing (exit 0 nothing to do, 1 changes, 3 refused)"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"},
			&cli.BoolFlag{Name: "shrink", Usage: "shrink an LVM volume (--lvm or --plan) asked smaller than it is, with its ext4, which must be unmounted"},
			&cli.StringFlag{Name: "image", Usage: "prepare a sparse image `FILE` on a loop device instead of a disk"},
			&cli.StringFlag{Name: "size", Usage: "`SIZE` of the --image file (10G)"},
			&cli.StringFlag{Name: "sector-size", Usage: "logical sector `BYTES` of the --image loop device: 512 or 4096", Value: "512"},
			&cli.StringFlag{Name: "plan", Usage: "prepare the disks of a YAML plan `FILE`"},
			&cli.StringFlag{Name: "raid", Usage: "make an md array of `LEVEL` (0, 1, 5, 6, 10) over the DEVICEs, the file system on it"},
			&cli.StringFlag{Name: "name", Usage: "`NAME` of the --raid array (/dev/md/NAME) or --cache volume (/dev/NAME/NAME, vg NAME)", Value: "data"},
			&cli.StringFlag{Name: "lvm", Usage: "make the LVM volume group `VG[/LV:SIZE]` over the DEVICEs and one logical volume (default data; SIZE 100G, a share of the group such as 50%, or the whole group) with the file system"},
			&cli.BoolFlag{Name: "no-discard", Usage: "do not discard (TRIM) the new space of SSDs"},
			&cli.StringFlag{Name: "cache", Usage: "make a cached volume: the slow `ORIGIN_DISK` (an HDD) gets one partition, the file system goes on the cached volume"},
			&cli.StringFlag{Name: "cache-device", Usage: "the fast `DISK_OR_PARTITION` (an SSD or NVMe) in front of --cache; a disk gets one partition, a partition is used as it is"},
			&cli.StringFlag{Name: "cache-mode", Usage: "`MODE` of the --cache: writethrough (default) or writeback (faster writes, lost if the cache device fails)"},
			&cli.BoolFlag{Name: "encrypt", Usage: "put the file system (of the DEVICE's partition, --raid, --lvm or the --cache'd volume) on LUKS2 (cryptsetup), unlocked at boot by --key-file (crypttab)"},
			&cli.StringFlag{Name: "key-file", Usage: "the key `FILE` of --encrypt: an absolute path, root's alone (0400); made with 64 random bytes when missing"},
			&cli.BoolFlag{Name: "passphrase", Usage: "unlock --encrypt with a passphrase instead of a key file: asked on the terminal (not echoed, twice for a new volume), and by systemd at boot"},
			&cli.BoolFlag{Name: "tpm2", Usage: "seal a key slot of --encrypt to this machine's TPM 2.0 (systemd-cryptenroll), which unlocks it at boot; --key-file enrolls it and stays as the recovery key"},
			&cli.StringFlag{Name: "cache-kind", Usage: "`KIND` of the --cache: lvmcache (default, dm-cache), writecache (dm-writecache, writeback only) or bcache"},
		},
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() > 1 && c.String("raid") == "" && c.String("lvm") == "" && c.String("cache") == "" {
				return usageErr(fmt.Errorf("prepare takes one device (got %q); several go with --raid or --lvm", c.Args().Slice()))
			}
			opts := prepareOptions{
				Device: c.Args().First(), Devices: c.Args().Slice(), Raid: c.String("raid"), RaidName: c.String("name"),
				LVM: c.String("lvm"), Cache: c.String("cache"), CacheDevice: c.String("cache-device"), CacheMode: c.String("cache-mode"), CacheKind: c.String("cache-kind"),
				NoDiscard: c.Bool("no-discard"), Image: c.String("image"), Size: c.String("size"), SectorSize: c.String("sector-size"),
				PlanFile: c.String("plan"), FS: strings.ToLower(c.String("fs")), Label: c.String("label"), Mount: c.String("mount"),
				MountOpts: c.String("mount-opt"), PartitionSize: c.String("partition-size"),
				Persist: c.Bool("persist"), MountOver: c.Bool("mount-over"), Wipe: c.Bool("wipe"), DryRun: c.Bool("dry-run") || c.Bool("diff"), Diff: c.Bool("diff"), Yes: c.Bool("yes"), Shrink: c.Bool("shrink"),
				Encrypt: c.Bool("encrypt"), KeyFile: c.String("key-file"), Passphrase: c.Bool("passphrase"), TPM2: c.Bool("tpm2"),
			}
			if v, ok := c.Generic("mkfs-opt").(*appendValue); ok {
				opts.MkfsOpts = v.vals
			}
			if opts.KeyFile != "" && !opts.Encrypt && opts.PlanFile == "" {
				return usageErr(errors.New("--key-file goes with --encrypt"))
			}
			if opts.Passphrase && !opts.Encrypt && opts.PlanFile == "" {
				return usageErr(errors.New("--passphrase goes with --encrypt"))
			}
			if opts.TPM2 && !opts.Encrypt && opts.PlanFile == "" {
				return usageErr(errors.New("--tpm2 goes with --encrypt"))
			}
			m, err := withTestFlags(c, machineOf(c))
			if err != nil {
				return err
			}
			return runPrepare(c.Context, opts, m, e)
		}),
	}
	cmd.Flags = append(cmd.Flags, testFlags()...)
	return cmd
}

// loadPlan reads --plan FILE; nil without --plan. Flags that the file
// replaces are refused rather than silently ignored.
func (o prepareOptions) loadPlan() (*planfile.Plan, error) {
	if o.PlanFile == "" {
		return nil, nil
	}
	if o.Device != "" || o.Image != "" || o.FS != "" || o.Label != "" || o.Mount != "" || o.MountOpts != "" ||
		len(o.MkfsOpts) > 0 || o.PartitionSize != "" || o.Persist || o.MountOver || o.Wipe || o.Size != "" || o.Raid != "" || o.LVM != "" ||
		o.Cache != "" || o.CacheDevice != "" || o.CacheMode != "" || o.CacheKind != "" || o.Encrypt || o.KeyFile != "" || o.Passphrase || o.TPM2 {
		return nil, usageErr(errors.New("--plan takes the disks and their settings from the file: only --dry-run, --diff, --yes and --shrink go with it"))
	}
	return planfile.Load(o.PlanFile)
}

// stackRequest turns --raid or --lvm into the disks' requests (one
// member partition each) and the stack over them.
func (o prepareOptions) stackRequest() ([]disk.Request, stack.StackRequest, error) {
	var st stack.StackRequest
	switch {
	case o.Raid != "" && o.LVM != "":
		return nil, st, usageErr(errors.New("give --raid or --lvm, not both"))
	case o.Image != "":
		return nil, st, usageErr(errors.New("--raid and --lvm take DEVICEs, not --image"))
	case o.FS == "":
		return nil, st, usageErr(errors.New("--fs is required: xfs or ext4"))
	case o.PartitionSize != "":
		return nil, st, usageErr(errors.New("--partition-size is for a single disk: each member gets the whole disk"))
	case len(o.Devices) == 0:
		return nil, st, usageErr(errors.New("--raid and --lvm need the member DEVICEs"))
	}
	vol := stack.VolumeSpec{FS: o.FS, Label: o.Label, Mount: o.Mount, MountOpts: o.MountOpts, MkfsOpts: o.MkfsOpts, Persist: o.Persist, MountOver: o.MountOver}
	if o.Encrypt {
		vol.Encrypt = o.cryptSpec()
	}
	use := ""
	if o.Raid != "" {
		level, err := strconv.Atoi(o.Raid)
		if err != nil {
			return nil, st, usageErr(fmt.Errorf("--raid %q: want a level: 0, 1, 5, 6 or 10", o.Raid))
		}
		st.Arrays = []stack.ArraySpec{{Name: o.RaidName, Level: level, Volume: vol}}
		use = "raid:" + o.RaidName
	} else {
		vg, lv, _ := strings.Cut(o.LVM, "/")
		name, size, _ := strings.Cut(lv, ":")
		if name == "" {
			name = "data"
		}
		spec := stack.LVSpec{Name: name, Volume: vol}
		pct, isPct, perr := units.ParsePercent(size)
		switch {
		case size == "" || strings.EqualFold(size, "100%FREE") || strings.EqualFold(size, "rest"):
		case isPct && perr == nil:
			spec.SizePercent = pct
		default:
			n, err := units.ParseSize(size)
			if isPct || err != nil || n == 0 {
				return nil, st, usageErr(fmt.Errorf("--lvm %s: size %q: want VG[/LV:SIZE] with a size such as 100G, a share of the group such as 50%%, or rest", o.LVM, size))
			}
			spec.SizeBytes = n
		}
		st.Groups = []stack.GroupSpec{{VG: vg, Volumes: []stack.LVSpec{spec}}}
		use = "lvm:" + vg
	}
	st.Wipe, st.NoDiscard = o.Wipe, o.NoDiscard
	seen := map[string]bool{}
	var reqs []disk.Request
	for _, d := range o.Devices {
		if seen[d] {
			return nil, st, usageErr(fmt.Errorf("%s is given twice", d))
		}
		seen[d] = true
		reqs = append(reqs, disk.Request{Device: d, Wipe: o.Wipe, NoDiscard: o.NoDiscard, Partitions: []disk.PartSpec{{Use: use}}})
	}
	if err := st.Validate(reqs); err != nil {
		return nil, st, err
	}
	return reqs, st, nil
}

// cacheRequest turns --cache ORIGIN --cache-device DEV into the origin
// disk's request (one partition, use: origin:NAME) and the cache entry,
// whose cache device is given as it is until the facts say whether it is
// a disk (disk.CacheDeviceRequest).
func (o prepareOptions) cacheRequest() ([]disk.Request, stack.StackRequest, error) {
	var st stack.StackRequest
	switch {
	case o.Cache == "":
		return nil, st, usageErr(errors.New("--cache-device, --cache-mode and --cache-kind go with --cache ORIGIN_DISK"))
	case o.CacheDevice == "":
		return nil, st, usageErr(errors.New("--cache needs --cache-device: the fast disk or partition in front of the origin"))
	case o.Raid != "" || o.LVM != "":
		return nil, st, usageErr(errors.New("give --cache, --raid or --lvm, not two"))
	case o.Image != "" || o.Device != "":
		return nil, st, usageErr(errors.New("--cache takes the origin disk itself: no DEVICE or --image besides"))
	case o.FS == "":
		return nil, st, usageErr(errors.New("--fs is required: xfs or ext4"))
	case o.PartitionSize != "":
		return nil, st, usageErr(errors.New("--partition-size is for a single disk: the origin gets the whole disk"))
	case o.Encrypt && o.CacheKind == stack.CacheKindBcache:
		return nil, st, usageErr(errors.New("--encrypt goes with --cache-kind lvmcache or writecache: a bcache device cannot be encrypted yet"))
	}
	b := stack.CacheBuild{Origin: o.Cache, CacheDevice: o.CacheDevice, Name: o.RaidName, Kind: o.CacheKind, Mode: o.CacheMode,
		Volume: stack.VolumeSpec{FS: o.FS, Label: o.Label, Mount: o.Mount, MountOpts: o.MountOpts, MkfsOpts: o.MkfsOpts, Persist: o.Persist, MountOver: o.MountOver},
		Wipe:   o.Wipe, NoDiscard: o.NoDiscard}
	if o.Encrypt {
		b.Volume.Encrypt = o.cryptSpec()
	}
	return b.Requests()
}

// cryptSpec is the LUKS2 layer --encrypt asks for.
func (o prepareOptions) cryptSpec() *crypt.Spec {
	return &crypt.Spec{KeyFile: o.KeyFile, Passphrase: o.Passphrase, TPM2: o.TPM2}
}

// encryptRequest turns DEVICE --encrypt into the disk's request, its one
// partition for LUKS2, and the file system on the partition's mapping.
func (o prepareOptions) encryptRequest() ([]disk.Request, stack.StackRequest, error) {
	var st stack.StackRequest
	if o.Image != "" {
		return nil, st, usageErr(errors.New("--encrypt takes a DEVICE, not --image"))
	}
	plain := o
	plain.Encrypt = false
	reqs, err := plain.flagRequest()
	if err != nil {
		return nil, st, err
	}
	ps := &reqs[0].Partitions[0]
	key := filepath.Base(o.Device)
	st.Encrypted = []stack.EncryptedSpec{{Key: key, Volume: stack.VolumeSpec{FS: ps.FS, Label: ps.Label, Mount: ps.Mount, MountOpts: ps.MountOpts,
		MkfsOpts: ps.MkfsOpts, Persist: ps.Persist, MountOver: ps.MountOver, Encrypt: o.cryptSpec()}}}
	*ps = disk.PartSpec{SizeBytes: ps.SizeBytes, SizePercent: ps.SizePercent, Label: ps.Label, Use: "crypt:" + key}
	st.Wipe, st.NoDiscard = o.Wipe, o.NoDiscard
	if err := st.Validate(reqs); err != nil {
		return nil, st, err
	}
	return reqs, st, nil
}

// flagRequest turns the flags into the one disk request they describe.
func (o prepareOptions) flagRequest() ([]disk.Request, error) {
	switch {
	case o.Device == "" && o.Image == "":
		return nil, usageErr(errors.New("prepare needs a DEVICE, --image FILE --size SIZE, or --plan FILE"))
	case o.Image != "" && o.Size != "" && units.IsSizeUnit(o.Device):
		return nil, usageErr(splitSizeErr(o.Size, o.Device))
	case o.Device != "" && o.Image != "":
		return nil, usageErr(errors.New("give a DEVICE or --image, not both"))
	case o.Size != "" && o.Image == "":
		return nil, usageErr(errors.New("--size is for --image"))
	case o.FS == "":
		return nil, usageErr(errors.New("--fs is required: xfs or ext4"))
	}
	ps := disk.PartSpec{FS: o.FS, Label: o.Label, Mount: o.Mount, MountOpts: o.MountOpts, MkfsOpts: o.MkfsOpts, Persist: o.Persist, MountOver: o.MountOver}
	if pct, isPct, err := units.ParsePercent(o.PartitionSize); isPct {
		if err != nil {
			return nil, usageErr(fmt.Errorf("--partition-size: %w (of the disk's size)", err))
		}
		ps.SizePercent = pct
	} else if o.PartitionSize != "" {
		n, err := units.ParseSize(o.PartitionSize)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--partition-size: %w", err))
		}
		if n == 0 {
			return nil, usageErr(errors.New("--partition-size must be more than 0"))
		}
		ps.SizeBytes = n
	}
	req := disk.Request{Device: o.Device, Image: o.Image, Wipe: o.Wipe, NoDiscard: o.NoDiscard, Partitions: []disk.PartSpec{ps}}
	if o.Image != "" {
		var err error
		if req.ImageSizeBytes, req.ImageSectorBytes, err = imageGeometry(o.Size, o.SectorSize); err != nil {
			return nil, usageErr(err)
		}
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return []disk.Request{req}, nil
}

func runPrepare(ctx context.Context, opts prepareOptions, m *machine, e *env) error {
	format, err := e.format("table", "json")
	if err != nil {
		return err
	}
	if e.Root != "" && e.Root != "/" && !opts.DryRun {
		return usageErr(errors.New("--root reads another machine's facts: prepare can only --dry-run with it"))
	}
	// Bad input is reported before anything else, root or not.
	if ext := strings.ToLower(filepath.Ext(opts.Device)); opts.PlanFile == "" && (ext == ".yaml" || ext == ".yml") {
		return usageErr(fmt.Errorf("%s is a plan, not a device: give it with --plan %s", opts.Device, opts.Device))
	}
	pf, err := opts.loadPlan()
	if err != nil {
		return err
	}
	if opts.Shrink && pf == nil && opts.LVM == "" {
		return usageErr(errors.New("--shrink shrinks LVM volumes: give it with --lvm or --plan"))
	}
	var reqs []disk.Request
	var stacks stack.StackRequest
	switch {
	case pf != nil:
		stacks = pf.Stacks()
	case opts.Cache != "" || opts.CacheDevice != "" || opts.CacheMode != "" || opts.CacheKind != "":
		if reqs, stacks, err = opts.cacheRequest(); err != nil {
			return err
		}
	case opts.Raid != "" || opts.LVM != "":
		if reqs, stacks, err = opts.stackRequest(); err != nil {
			return err
		}
	case opts.Encrypt:
		if reqs, stacks, err = opts.encryptRequest(); err != nil {
			return err
		}
	default:
		if reqs, err = opts.flagRequest(); err != nil {
			return err
		}
	}
	stacks.Shrink = opts.Shrink
	if !opts.DryRun && m.geteuid() != 0 {
		return errors.New("prepare needs root (try --dry-run to see the plan)")
	}
	deps := m.deps(e)
	if !opts.DryRun {
		// Locked before the facts are read: a second prepare of the same
		// disk started at the same time is refused here, naming this one,
		// rather than planning against a disk this one is rewriting.
		for _, r := range reqs {
			unlock, err := m.lockTarget(r, deps)
			if err != nil {
				return err
			}
			defer unlock()
		}
	}
	host, err := m.settledFacts(ctx, e, e, deps)
	if err != nil {
		return err
	}
	if len(stacks.Caches) == 1 && opts.Cache != "" {
		// The cache device is a disk to partition or a partition to use
		// as it is: the facts say which. A disk is locked as the origin was.
		r, isDisk := (stack.Planner{Planner: disk.Planner{Host: deps.Host, Roots: deps.Roots}}).CacheDeviceRequest(&stacks, host)
		if isDisk {
			reqs = append(reqs, r)
			if !opts.DryRun {
				unlock, err := m.lockTarget(r, deps)
				if err != nil {
					return err
				}
				defer unlock()
			}
		}
	}
	if pf != nil {
		resolved, err := pf.Resolve(host)
		if err != nil {
			return err
		}
		for _, r := range resolved {
			reqs = append(reqs, r.Request)
			if !opts.DryRun {
				// Facts came first here (the file selects disks by them):
				// Apply's re-check catches a change made before the lock.
				unlock, err := m.lockTarget(r.Request, deps)
				if err != nil {
					return err
				}
				defer unlock()
			}
		}
	}
	pl := disk.Planner{Host: deps.Host, Roots: deps.Roots, Protect: []string{e.resultsTree()}}
	plans, sp, err := planPrepare(ctx, pl, reqs, stacks, host)
	if opts.Diff {
		return runDiff(ctx, e, format, pl, reqs, stacks, host, deps, plans, sp, err)
	}
	if err != nil {
		return err
	}
	if opts.DryRun && sp != nil {
		if format == "json" {
			return writeJSON(e.Stdout, newPreparePlanDoc(plans, sp))
		}
		for _, p := range plans {
			if err := p.WriteText(e.Stdout); err != nil {
				return err
			}
		}
		if err := sp.WriteText(e.Stdout); err != nil {
			return err
		}
		fmt.Fprintln(e.Stdout, "dry run: nothing was changed")
		return nil
	}
	if !e.Quiet {
		for _, p := range plans {
			warnImagePersist(e.Stderr, p)
		}
	}
	if opts.DryRun {
		if format == "json" {
			return writeJSON(e.Stdout, newPreparePlanDoc(plans, nil))
		}
		if n, err := units.ParseSize(opts.PartitionSize); err == nil && n > 0 {
			// The partition line shows the aligned size in binary units;
			// this says how the size typed was read (10GB is 10^10 bytes).
			fmt.Fprintf(e.Stdout, "--partition-size %s reads as %s\n", opts.PartitionSize, units.FormatSizeBoth(n))
		}
		for _, p := range plans {
			if err := p.WriteText(e.Stdout); err != nil {
				return err
			}
		}
		fmt.Fprintln(e.Stdout, "dry run: nothing was changed")
		return nil
	}
	for _, p := range plans {
		if err := confirmPlan(ctx, e, p, opts.Yes); err != nil {
			return err
		}
	}
	if sp != nil {
		secrets, err := askPassphrases(ctx, e, sp.Passphrases())
		if err != nil {
			return err
		}
		defer func() {
			for _, s := range secrets {
				clear(s)
			}
		}()
		deps.Passphrase = func(_ context.Context, name string, _ bool) ([]byte, error) {
			if s, ok := secrets[name]; ok {
				return append([]byte(nil), s...), nil
			}
			return nil, fmt.Errorf("LUKS2 volume %s: its passphrase was not asked before the first step", name)
		}
	}
	if deps.Refresh == nil {
		deps.Refresh = func(ctx context.Context) (*hwinfo.Host, error) { return m.readFacts(ctx, e.Root, e) }
	}
	var lastPlan *disk.Plan
	var lastRes *disk.Result
	results, err := disk.ApplyAll(ctx, plans, func(ctx context.Context, p *disk.Plan) (*disk.Result, error) {
		res, err := m.apply(ctx, p, deps)
		lastPlan, lastRes = p, res
		return res, err
	})
	if err != nil {
		// Show what the earlier disks got before failing on this one.
		for _, r := range results {
			r.WriteText(e.Stderr)
		}
		if (errors.Is(err, context.Canceled) || ctx.Err() != nil) && lastPlan != nil {
			e.Logger.Debug("interrupted", "err", err)
			return interruptedState(lastPlan, lastRes, err)
		}
		return err
	}
	var sres *stack.StackResult
	if sp != nil {
		sres, err = stack.ApplyStacks(ctx, sp, deps)
		if err != nil {
			for _, r := range results {
				r.WriteText(e.Stderr)
			}
			if sres != nil {
				sres.WriteText(e.Stderr)
			}
			return err
		}
	}
	if format == "json" {
		return writeJSON(e.Stdout, newPrepareResultDoc(results, sres))
	}
	for _, r := range results {
		if err := r.WriteText(e.Stdout); err != nil {
			return err
		}
	}
	if sres != nil {
		return sres.WriteText(e.Stdout)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// splitSizeErr answers "--size 10 GB": the shell made the unit a word of
// its own, which then read as the DEVICE.
func splitSizeErr(size, unit string) error {
	return fmt.Errorf("--size %s %s: write the size as one word: --size %s%s (or \"%s %s\" in quotes)", size, unit, size, unit, size, unit)
}

// imageGeometry reads --size and --sector-size of an --image (prepare and
// fscompare): a size of 0 means "keep the existing image's", a sector size
// of 0 means 512.
func imageGeometry(size, sector string) (sizeBytes, sectorBytes uint64, err error) {
	if size != "" {
		if sizeBytes, err = units.ParseCapacity(size); err != nil {
			return 0, 0, fmt.Errorf("--size: %w", err)
		}
		if sizeBytes == 0 {
			return 0, 0, errors.New("--size must be more than 0")
		}
	}
	switch sector {
	case "", "512":
	case "4096", "4k", "4K":
		sectorBytes = 4096
	default:
		return 0, 0, fmt.Errorf("--sector-size %q: use 512 or 4096", sector)
	}
	return sizeBytes, sectorBytes, nil
}

// planPrepare plans the disks, then the stacks over them.
func planPrepare(ctx context.Context, pl disk.Planner, reqs []disk.Request, stacks stack.StackRequest, host *hwinfo.Host) ([]*disk.Plan, *stack.StackPlan, error) {
	plans, err := pl.PlanAll(reqs, host)
	if err != nil {
		return nil, nil, err
	}
	if stacks.Empty() {
		return plans, nil, nil
	}
	sp, err := (stack.Planner{Planner: pl}).PlanStacks(ctx, stacks, plans, reqs, host)
	return plans, sp, err
}

// planDiffDoc is what prepare --diff -o json prints.
type planDiffDoc struct {
	Schema  string        `json:"schema"`
	Changed bool          `json:"changed"`
	Refused string        `json:"refused,omitempty"`
	Changes []disk.Change `json:"changes"`
}

// runDiff prints what applying the plans would do, layer by layer. A plan
// the guard refuses is planned again as with --wipe, to show what that
// would destroy; the refusal is still the outcome (exit 3).
func runDiff(ctx context.Context, e *env, format string, pl disk.Planner, reqs []disk.Request, stacks stack.StackRequest, host *hwinfo.Host,
	deps disk.Deps, plans []*disk.Plan, sp *stack.StackPlan, planErr error) error {
	refused := ""
	if planErr != nil {
		if !errors.Is(planErr, disk.ErrRefused) {
			return planErr
		}
		refused = planErr.Error()
		wiped := make([]disk.Request, len(reqs))
		for i, r := range reqs {
			r.Wipe = true
			wiped[i] = r
		}
		stacks.Wipe = true
		var err error
		if plans, sp, err = planPrepare(ctx, pl, wiped, stacks, host); err != nil {
			plans, sp = nil, nil
		}
	}
	d, err := disk.Diff(plans, host, deps)
	if err != nil {
		return err
	}
	cs := d.Changes
	if planErr == nil && d.Refusal != nil {
		planErr, refused = d.Refusal, d.Refusal.Error()
	}
	if sp != nil {
		more, err := stack.DiffStacks(sp, d.Fstab, deps)
		if err != nil {
			return err
		}
		cs = append(cs, more...)
	}
	for _, n := range d.Notes {
		fmt.Fprintln(e.Stderr, "note: "+n)
	}
	if cs == nil {
		cs = []disk.Change{}
	}
	if format == "json" {
		if err := writeJSON(e.Stdout, planDiffDoc{Schema: disk.DiffSchema, Changed: disk.Changed(cs), Refused: refused, Changes: cs}); err != nil {
			return err
		}
	} else if len(cs) > 0 {
		if refused != "" && d.Refusal == nil {
			fmt.Fprintln(e.Stdout, "refused as planned; with --wipe it would do:")
		}
		if err := disk.WriteChanges(e.Stdout, cs); err != nil {
			return err
		}
	}
	switch {
	case planErr != nil:
		return planErr
	case disk.Changed(cs):
		return silentError{errors.New("the plan would change the disks"), exitFailure}
	}
	return nil
}
