package stack

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo/probe"
)

// EncryptSpec asks for the file system of an array or logical volume to sit
// on LUKS2: the volume is formatted with cryptsetup, opened at
// /dev/mapper/NAME, and the file system made there.
type EncryptSpec struct {
	// KeyFile unlocks the volume: an absolute path on the host, made
	// (0400, root's, 64 random bytes) when missing.
	KeyFile string `json:"key_file"`
	// Name is the mapping's name; "" is the volume's own name and
	// "_crypt" (data_crypt, vg-lv_crypt).
	Name string `json:"name,omitempty"`
	// Discard lets TRIM through the mapping (open --allow-discards, the
	// crypttab's "discard"). Never by default: it shows which blocks are
	// free to anyone holding the disk.
	Discard bool `json:"discard,omitempty"`
}

// CryptPlan is the LUKS2 layer under a volume's file system.
type CryptPlan struct {
	Name    string `json:"name"`    // the mapping's name
	Backing string `json:"backing"` // the array or volume it encrypts
	Mapper  string `json:"mapper"`  // /dev/mapper/NAME
	UUID    string `json:"uuid"`    // the LUKS header's
	KeyFile string `json:"key_file"`
	// MakeKey: the key file is missing and is made before luksFormat.
	MakeKey bool `json:"make_key,omitempty"`
	// SectorBytes is the encryption sector; SectorWhy says why it was
	// chosen.
	SectorBytes uint64 `json:"sector_bytes"`
	SectorWhy   string `json:"sector_why,omitempty"`
	// Format is the luksFormat argv, nil when the header is there; Open
	// the open argv, nil when the mapping is open.
	Format []string `json:"format,omitempty"`
	Open   []string `json:"open,omitempty"`
	// FSAfterOpen: the volume is closed, so what is on it is looked at
	// once it is opened (the same rules as planFormat's).
	FSAfterOpen  bool   `json:"fs_after_open,omitempty"`
	Crypttab     string `json:"crypttab,omitempty"` // the file, when persisted
	CrypttabLine string `json:"crypttab_line,omitempty"`
	// Wipe and NoDiscard are the request's, for FSAfterOpen.
	Wipe      bool `json:"wipe,omitempty"`
	NoDiscard bool `json:"no_discard,omitempty"`
	// lineMissing: crypttab has no entry for the mapping yet.
	lineMissing bool
}

// changes says whether the layer needs any step.
func (c *CryptPlan) changes() bool {
	return c != nil && (c.MakeKey || c.Format != nil || c.Open != nil || c.lineMissing)
}

// keyFileBytes is the size of a key file diskprep makes: 512 bits, as
// cryptsetup's own default key file read limit is far above it and a LUKS2
// volume key is at most that.
const keyFileBytes = 64

// luksFormatArgv is the luksFormat of a new volume. A key file of 512
// random bits needs no key stretching, so PBKDF2 with cryptsetup's least
// iterations (as systemd-cryptenroll does for its high-entropy keys):
// argon2id's default second and up to 1 GiB of memory would be spent at
// every unlock for nothing.
func luksFormatArgv(c *CryptPlan) []string {
	return []string{"cryptsetup", "luksFormat", "--batch-mode", "--type", "luks2", "--uuid", c.UUID,
		"--sector-size", fmt.Sprint(c.SectorBytes), "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000",
		"--key-file", c.KeyFile, c.Backing}
}

func luksOpenArgv(c *CryptPlan, discard bool) []string {
	argv := []string{"cryptsetup", "open", "--type", "luks2", "--key-file", c.KeyFile}
	if discard {
		argv = append(argv, "--allow-discards")
	}
	return append(argv, c.Backing, c.Name)
}

// cryptName is the default mapping name of a volume: the array's name or
// the group's and volume's, and "_crypt", as Debian's installer names them.
func cryptName(dev string) string {
	if strings.HasPrefix(dev, "/dev/md/") {
		return filepath.Base(dev) + "_crypt"
	}
	return filepath.Base(filepath.Dir(dev)) + "-" + filepath.Base(dev) + "_crypt"
}

// validCryptName: a device-mapper name diskprep writes into crypttab and
// /dev/mapper (no slash, no space, short).
func validCryptName(n string) bool {
	if n == "" || len(n) > 100 || n == "." || n == ".." || n == "control" {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.+", r)) {
			return false
		}
	}
	return true
}

// Validate checks an EncryptSpec on its own: bad input whatever the
// machine (the error says what, without where).
func (e EncryptSpec) Validate() error {
	switch {
	case e.KeyFile == "":
		return errors.New("encrypt needs a key file (--key-file PATH)")
	case !filepath.IsAbs(e.KeyFile) || filepath.Clean(e.KeyFile) != e.KeyFile:
		return fmt.Errorf("key file %q: give a clean absolute path", e.KeyFile)
	case strings.ContainsAny(e.KeyFile, " \t\n\\#"):
		return fmt.Errorf("key file %q: a crypttab path cannot hold spaces, tabs, backslashes or #", e.KeyFile)
	case e.Name != "" && !validCryptName(e.Name):
		return fmt.Errorf("encrypt name %q: use letters, digits and - _ . +", e.Name)
	}
	return nil
}

// checkEncrypt is the request's own check of an EncryptSpec (ErrUsage).
func checkEncrypt(e *EncryptSpec, what string) error {
	if e == nil {
		return nil
	}
	if err := e.Validate(); err != nil {
		return disk.Usagef("%s: %v", what, err)
	}
	return nil
}

// checkKeyFile refuses a key file that others could read or swap: it must
// be a regular file owned by root with no group or other permission, in
// directories owned by root that no one else can write, reached through no
// link another user made or could replace (disk.FollowUserPath, the one
// rule for every path a user gives). Missing, it is made at apply (make
// true), in a directory that must pass the same check once it exists.
func (pl Planner) checkKeyFile(path string) (make bool, err error) {
	h := pl.HostOrLive()
	real, err := disk.FollowUserPath(h, "", "key file "+path, pl.Roots.HostPath(strings.TrimPrefix(path, "/")))
	switch {
	case disk.IsRefusal(err):
		return false, err
	case isNotExist(err):
		make = true
	case err != nil:
		return false, fmt.Errorf("key file %s: %w", path, err)
	default:
		fi, err := h.Stat(real)
		if err != nil {
			return false, fmt.Errorf("key file %s: %w", path, err)
		}
		switch {
		case !fi.Mode().IsRegular():
			return false, disk.Refuse(path, fmt.Sprintf("key file %s is not a regular file", path))
		case !rootOwns(fi):
			return false, disk.Refuse(path, fmt.Sprintf("key file %s is not owned by root", path))
		case fi.Mode().Perm()&0o077 != 0:
			return false, disk.Refuse(path, fmt.Sprintf("key file %s is readable or writable by others (mode %04o): chmod 0400 it", path, fi.Mode().Perm()))
		case fi.Size() == 0:
			return false, disk.Refuse(path, fmt.Sprintf("key file %s is empty", path))
		}
	}
	// Its directories, from the nearest that exists up: none another user
	// can write (they could swap the file, or plant one before it is made).
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		di, err := h.Stat(pl.Roots.HostPath(strings.TrimPrefix(dir, "/")))
		if err == nil {
			if !di.IsDir() {
				return false, disk.Refuse(path, fmt.Sprintf("%s is not a directory", dir))
			}
			if !rootOwns(di) || di.Mode().Perm()&0o022 != 0 && di.Mode()&fs.ModeSticky == 0 {
				return false, disk.Refuse(path, fmt.Sprintf("key file %s lies in %s, which a user other than root can write", path, dir))
			}
		} else if !isNotExist(err) {
			return false, fmt.Errorf("key file %s: %w", path, err)
		}
		if dir == "/" {
			break
		}
	}
	return make, nil
}

// rootOwns says whether root owns the file.
func rootOwns(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// sectorFor chooses the encryption sector: 4096 where the device allows it
// (its size a whole number of 4 KiB, its logical sector at most that): the
// kernel's 512 costs several times the CPU on 4 KiB I/O.
func sectorFor(size, logical uint64) (uint64, string) {
	switch {
	case logical > 4096:
		return logical, fmt.Sprintf("the device's logical sector is %d bytes", logical)
	case size%4096 != 0:
		return 512, "the device's size is not a whole number of 4 KiB"
	case logical == 4096:
		return 4096, "the device's logical sector is 4096 bytes (4Kn)"
	}
	return 4096, "4 KiB I/O encrypts in one piece instead of eight, and the device's size allows it"
}

// planEncrypt puts the LUKS2 layer of e under the volume v, whose Device is
// the array or logical volume, and plans its file system on the mapping.
// node is the backing device's node when it exists now ("" for one this
// plan creates); fresh: the backing is new or is to be wiped, so nothing
// on it counts.
func (pl Planner) planEncrypt(v *VolumePlan, e *EncryptSpec, node string, fresh bool, size uint64, req StackRequest, mounts []disk.MountEntry, geometry string) error {
	c := &CryptPlan{Name: e.Name, Backing: v.Device, KeyFile: e.KeyFile}
	if c.Name == "" {
		c.Name = cryptName(v.Device)
	}
	c.Mapper = pl.Roots.DevPath("mapper", c.Name)
	var err error
	if c.MakeKey, err = pl.checkKeyFile(e.KeyFile); err != nil {
		return err
	}
	h := pl.HostOrLive()
	logical := uint64(512)
	var found *probe.Signature
	if node != "" {
		f, err := h.OpenDevice(node, false)
		if err != nil {
			return fmt.Errorf("probe %s: %w", node, err)
		}
		if n, err := f.Size(); err == nil {
			size = n
		}
		if l, err := f.LogicalSector(); err == nil && l > 0 {
			logical = l
		}
		var sigs []probe.Signature
		if !fresh {
			sigs, err = disk.ProbeSignatures(io.NewSectionReader(f, 0, int64(size)), int64(size))
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("probe %s: %w", node, err)
		}
		for i := range sigs {
			if sigs[i].Usage == "filesystem" || sigs[i].Type == "swap" || sigs[i].Usage == "raid" || sigs[i].Usage == "crypto" {
				found = &sigs[i]
				break
			}
		}
	}
	c.SectorBytes, c.SectorWhy = sectorFor(size, logical)

	// The mapping: open over this backing, or not there; open over
	// anything else is refused.
	open := false
	if mapped, ok := pl.mappedOver(c.Mapper); ok {
		want := ""
		if node != "" {
			if r, err := h.EvalSymlinks(node); err == nil {
				want = filepath.Base(r)
			}
		}
		if want == "" || mapped != want {
			return disk.Refuse(c.Mapper, fmt.Sprintf("%s is already open over %s, not %s", c.Mapper, orNone(mapped), v.Device))
		}
		open = true
	}

	mapperVol := func() {
		v.Device = c.Mapper
		v.FSUUID = pl.MakeUUID()
		v.Mkfs = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, true, req.NoDiscard, geometry)
		if v.MountPoint != "" {
			v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
		}
	}
	switch {
	case fresh || found == nil:
		if open {
			return disk.Refuse(c.Mapper, fmt.Sprintf("%s is open over %s, which holds no LUKS header", c.Mapper, v.Device))
		}
		c.UUID = pl.MakeUUID()
		c.Format = luksFormatArgv(c)
		c.Open = luksOpenArgv(c, e.Discard)
		mapperVol()
	case found.Type == "crypto_LUKS" && c.MakeKey && !req.Wipe:
		return disk.Refuse(v.Device, fmt.Sprintf("%s holds a LUKS volume and its key file %s is missing (pass --wipe to encrypt it anew, losing what it holds)", v.Device, c.KeyFile))
	case found.Type == "crypto_LUKS" && !c.MakeKey:
		c.UUID = found.UUID
		if open {
			v.Device = c.Mapper
			real, _ := h.EvalSymlinks(c.Mapper)
			if err := pl.planVolume(v, real, req, mounts, geometry); err != nil {
				return err
			}
		} else {
			c.Open = luksOpenArgv(c, e.Discard)
			c.FSAfterOpen = true
			v.Device = c.Mapper
			if v.MountPoint != "" {
				v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
			}
		}
	case !req.Wipe:
		return disk.Refuse(v.Device, fmt.Sprintf("%s holds %s%s, not the LUKS2 volume asked (pass --wipe to replace it)", v.Device, found.Type, disk.LabelSuffix(found.Label)))
	default:
		c.UUID = pl.MakeUUID()
		c.Format = luksFormatArgv(c)
		c.Open = luksOpenArgv(c, e.Discard)
		mapperVol()
	}
	if v.Persist {
		if err := pl.planCrypttab(c, e.Discard, v.Device); err != nil {
			return err
		}
	}
	c.Wipe, c.NoDiscard = req.Wipe, req.NoDiscard
	v.Crypt = c
	return nil
}

// planVolumeOn plans the file system of v on its array or logical volume:
// encrypted when e asks it; fresh (new, or to be wiped) means mkfs with
// force when force, else what is at node decides (planVolume).
func (pl Planner) planVolumeOn(v *VolumePlan, e *EncryptSpec, node string, fresh, force bool, size uint64, req StackRequest, mounts []disk.MountEntry, geometry string) error {
	if e != nil {
		return pl.planEncrypt(v, e, node, fresh, size, req, mounts, geometry)
	}
	if !fresh {
		return pl.planVolume(v, node, req, mounts, geometry)
	}
	v.FSUUID = pl.MakeUUID()
	v.Mkfs = disk.MkfsFor(v.FS, v.Label, v.FSUUID, v.MkfsOpts, v.Device, force, req.NoDiscard, geometry)
	if v.MountPoint != "" {
		v.MountArgv = disk.MountFor(v.FS, v.MountOpts, v.Device, v.MountPoint)
	}
	return nil
}

// planCrypttab gives c its crypttab line, refusing an entry of the same
// name that says something else; subject names the refusal.
func (pl Planner) planCrypttab(c *CryptPlan, discard bool, subject string) error {
	c.Crypttab = pl.Roots.HostPath("etc/crypttab")
	// nofail: a boot without the key (or the disk) still completes, as
	// the fstab line's nofail lets it; headless: a missing key file
	// fails the unit at once instead of waiting for a passphrase on a
	// console nobody watches (systemd >= 250; older ones ignore it).
	opts := "luks,nofail,headless=true"
	if discard {
		opts += ",discard"
	}
	c.CrypttabLine = fmt.Sprintf("%s UUID=%s %s %s", c.Name, c.UUID, c.KeyFile, opts)
	data, _ := pl.HostOrLive().ReadFile(c.Crypttab)
	have, _, ok := crypttabEntry(string(data), c.Name)
	if ok && !sameCrypttabLine(have, c.CrypttabLine) {
		return disk.Refuse(subject, fmt.Sprintf("%s already has %s as %q, not %q", c.Crypttab, c.Name, strings.TrimSpace(have), c.CrypttabLine))
	}
	c.lineMissing = !ok
	return nil
}

// mappedOver says whether the mapping at mapper exists, and the kernel
// name of the one device under it ("" when not one).
func (pl Planner) mappedOver(mapper string) (string, bool) {
	h := pl.HostOrLive()
	real, err := h.EvalSymlinks(mapper)
	if err != nil {
		return "", false
	}
	if maj, min, err := h.DeviceNumber(real); err == nil {
		if des, err := h.ReadDir(pl.Roots.SysPath("dev/block", fmt.Sprintf("%d:%d", maj, min), "slaves")); err == nil && len(des) == 1 {
			return des[0].Name(), true
		}
	}
	return "", true
}
