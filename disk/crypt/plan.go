package crypt

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo/probe"
)

// Planner plans LUKS2 layers on the machine of its disk.Planner.
type Planner struct{ disk.Planner }

// Target is the device a layer encrypts, as its planner found it.
type Target struct {
	// Path names it in the plan (/dev/md/data, /dev/vg/lv, /dev/sdb1);
	// Node is its node now, "" when the plan makes it.
	Path, Node string
	// SizeBytes and LogicalSector choose the encryption sector.
	SizeBytes, LogicalSector uint64
	// Found is the first signature on it that matters, nil for none (or
	// when it is new, or to be wiped: nothing on it counts).
	Found *probe.Signature
}

// Layer is the LUKS2 layer of e, named name ("" is e's name, else
// DefaultName), over b. What b holds decides: nothing is formatted and
// opened; a LUKS header whose key file is there is opened unless it is;
// anything else, or a LUKS header whose key file has gone, only with wipe.
// makeKey is CheckKeyFile's answer; persist gives the layer its crypttab
// line. A mapping of that name open over another device is refused.
func (pl Planner) Layer(e *Spec, name string, b Target, makeKey, wipe, persist bool) (*Plan, error) {
	if name == "" {
		name = e.Name
	}
	if name == "" {
		name = DefaultName(b.Path)
	}
	c := &Plan{Name: name, Backing: b.Path, Mapper: pl.Roots.DevPath("mapper", name), KeyFile: e.KeyFile, Passphrase: e.Passphrase, MakeKey: makeKey && !e.Passphrase, TPM2: e.TPM2}
	if e.TPM2 {
		if err := pl.checkTPM2(b.Path); err != nil {
			return nil, err
		}
	}
	logical := b.LogicalSector
	if logical == 0 {
		logical = 512
	}
	var err error
	if c.SectorBytes, c.SectorWhy, err = sectorFor(b.SizeBytes, logical, e.SectorBytes); err != nil {
		return nil, disk.Refuse(b.Path, err.Error())
	}

	open := false
	if mapped, ok := pl.MappedOver(c.Mapper); ok {
		want := ""
		if b.Node != "" {
			if r, err := pl.HostOrLive().EvalSymlinks(b.Node); err == nil {
				want = filepath.Base(r)
			}
		}
		if want == "" || mapped != want {
			return nil, disk.Refuse(c.Mapper, fmt.Sprintf("%s is already open over %s, not %s", c.Mapper, orNone(mapped), b.Path))
		}
		open = true
	}
	found := b.Found
	luks := found != nil && found.Type == "crypto_LUKS"
	switch {
	case luks && makeKey && !wipe:
		return nil, disk.Refuse(b.Path, fmt.Sprintf("%s holds a LUKS volume and its key file %s is missing (pass --wipe to encrypt it anew, losing what it holds)", b.Path, c.KeyFile))
	case luks && !makeKey:
		c.UUID = found.UUID
		if e.TPM2 {
			enrolled, err := pl.tpm2Enrolled(b.Path)
			if err != nil {
				return nil, err
			}
			if !enrolled {
				c.Enroll = enrollArgv(c)
			}
		}
		if !open {
			// What a closed mapping holds cannot be seen: it is opened,
			// and what is on it planned then.
			c.Open = openArgv(c, e.Discard)
			c.FSAfterOpen = true
		}
	case found != nil && !luks && !wipe:
		return nil, disk.Refuse(b.Path, fmt.Sprintf("%s holds %s%s, not the LUKS2 volume asked (pass --wipe to replace it)", b.Path, found.Type, disk.LabelSuffix(found.Label)))
	case open:
		return nil, disk.Refuse(c.Mapper, fmt.Sprintf("%s is open over %s, which is to be formatted anew: close it first", c.Mapper, b.Path))
	default:
		c.UUID = pl.MakeUUID()
		c.Format = formatArgv(c)
		c.Open = openArgv(c, e.Discard)
		if e.TPM2 {
			c.Enroll = enrollArgv(c)
		}
	}
	if persist {
		if err := pl.planCrypttab(c, e.Discard, b.Path); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// KeyFileMissing is CheckKeyFile of e's key file: whether it is to be
// made; false for a passphrase.
func (pl Planner) KeyFileMissing(e *Spec) (bool, error) {
	if e.Passphrase {
		return false, nil
	}
	return pl.CheckKeyFile(e.KeyFile)
}

// CheckKeyFile refuses a key file that others could read or swap: it must
// be a regular file owned by root with no group or other permission, in
// directories owned by root that no one else can write, reached through no
// link another user made or could replace (disk.FollowUserPath, the one
// rule for every path a user gives). Missing, it is made at apply (make
// true), in a directory that must pass the same check once it exists.
func (pl Planner) CheckKeyFile(path string) (make bool, err error) {
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

func orNone(s string) string {
	if s == "" {
		return "(none reported)"
	}
	return s
}

// planCrypttab gives c its crypttab line, refusing an entry of the same
// name that says something else; subject names the refusal.
func (pl Planner) planCrypttab(c *Plan, discard bool, subject string) error {
	c.Crypttab = pl.Roots.HostPath("etc/crypttab")
	// nofail: a boot without the key (or the disk) still completes, as
	// the fstab line's nofail lets it; headless: a missing key file
	// fails the unit at once instead of waiting for a passphrase on a
	// console nobody watches (systemd >= 250; older ones ignore it). A
	// passphrase is asked on the console: key file none, not headless.
	opts, key := "luks,nofail,headless=true", c.KeyFile
	switch {
	case c.Passphrase:
		opts, key = "luks,nofail", "none"
	case c.TPM2:
		// The TPM alone unlocks it at boot: the key file is for
		// recovery, and may be kept elsewhere.
		opts, key = "luks,nofail,headless=true,tpm2-device=auto", "none"
	}
	if discard {
		opts += ",discard"
	}
	c.CrypttabLine = fmt.Sprintf("%s UUID=%s %s %s", c.Name, c.UUID, key, opts)
	data, _ := pl.HostOrLive().ReadFile(c.Crypttab)
	have, _, ok := crypttabEntry(string(data), c.Name)
	if ok && !sameCrypttabLine(have, c.CrypttabLine) {
		return disk.Refuse(subject, fmt.Sprintf("%s already has %s as %q, not %q", c.Crypttab, c.Name, strings.TrimSpace(have), c.CrypttabLine))
	}
	c.lineMissing = !ok
	return nil
}

// checkTPM2 refuses a TPM2 layer on a machine the kernel shows no TPM
// 2.0 on.
func (pl Planner) checkTPM2(subject string) error {
	h := pl.HostOrLive()
	des, _ := h.ReadDir(pl.Roots.SysPath("class", "tpm"))
	for _, de := range des {
		b, err := h.ReadFile(pl.Roots.SysPath("class", "tpm", de.Name(), "tpm_version_major"))
		if err == nil && strings.TrimSpace(string(b)) == "2" {
			return nil
		}
	}
	return disk.Refuse(subject, "tpm2 was asked, but this machine has no TPM 2.0 (none in /sys/class/tpm)")
}

// tpm2Enrolled says whether the LUKS2 header on dev has a TPM-sealed key
// slot (systemd-cryptenroll's token).
func (pl Planner) tpm2Enrolled(dev string) (bool, error) {
	l, err := ReadHeader(pl.HostOrLive(), dev)
	if err != nil {
		return false, err
	}
	return slices.Contains(l.Tokens, TPM2Token), nil
}

// ReadHeader reads the LUKS header on dev through h.
func ReadHeader(h disk.Host, dev string) (*probe.LUKS, error) {
	f, err := h.OpenDevice(dev, false)
	if err != nil {
		return nil, fmt.Errorf("read the LUKS header of %s: %w", dev, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("read the LUKS header of %s: %w", dev, err)
	}
	l, err := probe.ReadLUKS(f, int64(size))
	if err != nil {
		return nil, fmt.Errorf("read the LUKS header of %s: %w", dev, err)
	}
	return l, nil
}

// MappedOver says whether the mapping at mapper exists, and the kernel
// name of the one device under it ("" when not one).
func (pl Planner) MappedOver(mapper string) (string, bool) {
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
