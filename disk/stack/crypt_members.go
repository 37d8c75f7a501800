package stack

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo/probe"
)

// luksHeaderBytes is what a LUKS2 header takes at the start of its device
// (cryptsetup's default for a volume of this size): the mapping is that
// much smaller.
const luksHeaderBytes = 16 << 20

// planMemberCrypts gives each member partition of an encrypted group its
// LUKS2 layer and returns the members as LVM sees them: the mappings. A
// plain group's member holding LUKS is refused: pvcreate over it would
// destroy someone's encrypted volume.
func (pl Planner) planMemberCrypts(g GroupSpec, ms []member, req StackRequest) ([]member, []*CryptPlan, error) {
	if g.Encrypt == nil {
		for _, m := range ms {
			if m.ex == nil {
				continue
			}
			sigs, err := pl.probe(m.path)
			if err != nil {
				return nil, nil, err
			}
			if slices.ContainsFunc(sigs, func(s probe.Signature) bool { return s.Type == "crypto_LUKS" }) {
				return nil, nil, disk.Refuse(m.path, fmt.Sprintf("%s holds a LUKS volume, and vg %s's members are not encrypted (encrypt: under the lvm entry), or release it first", m.path, g.VG))
			}
		}
		return ms, nil, nil
	}
	e := g.Encrypt
	makeKey, err := pl.checkKeyFile(e.KeyFile)
	if err != nil {
		return nil, nil, err
	}
	out := make([]member, len(ms))
	var crypts []*CryptPlan
	for i, m := range ms {
		c := &CryptPlan{Name: filepath.Base(m.path) + "_crypt", Backing: m.path, KeyFile: e.KeyFile, MakeKey: makeKey && i == 0,
			Wipe: req.Wipe, NoDiscard: req.NoDiscard}
		c.Mapper = pl.Roots.DevPath("mapper", c.Name)
		logical := uint64(512)
		if m.disk != nil && m.disk.LogicalSectorBytes > 0 {
			logical = m.disk.LogicalSectorBytes
		}
		c.SectorBytes, c.SectorWhy = sectorFor(m.part.SizeBytes, logical)
		var found *probe.Signature
		if m.ex != nil {
			sigs, err := pl.probe(m.path)
			if err != nil {
				return nil, nil, err
			}
			for i := range sigs {
				if sigs[i].Usage != "partition_table" {
					found = &sigs[i]
					break
				}
			}
		}
		open := false
		if mapped, ok := pl.mappedOver(c.Mapper); ok {
			if mapped != filepath.Base(m.path) {
				return nil, nil, disk.Refuse(c.Mapper, fmt.Sprintf("%s is already open over %s, not %s", c.Mapper, orNone(mapped), m.path))
			}
			open = true
		}
		switch {
		case found == nil || found.Type != "crypto_LUKS" && req.Wipe:
			if open {
				return nil, nil, disk.Refuse(c.Mapper, fmt.Sprintf("%s is open over %s, which holds no LUKS header", c.Mapper, m.path))
			}
			c.UUID = pl.MakeUUID()
			c.Format = luksFormatArgv(c)
			c.Open = luksOpenArgv(c, e.Discard)
		case found.Type != "crypto_LUKS":
			return nil, nil, disk.Refuse(m.path, fmt.Sprintf("%s holds %s%s, not the LUKS2 volume asked (pass --wipe to replace it)", m.path, found.Type, disk.LabelSuffix(found.Label)))
		case makeKey && !req.Wipe:
			return nil, nil, disk.Refuse(m.path, fmt.Sprintf("%s holds a LUKS volume and its key file %s is missing (pass --wipe to encrypt it anew, losing what it holds)", m.path, e.KeyFile))
		case makeKey:
			c.UUID = pl.MakeUUID()
			c.Format = luksFormatArgv(c)
			c.Open = luksOpenArgv(c, e.Discard)
		case !open:
			// LVM cannot say what a closed mapping holds (a run killed
			// after luksFormat, a release without --wipe): it is opened,
			// and the group planned again from what LVM then finds.
			c.UUID = found.UUID
			c.Open = luksOpenArgv(c, e.Discard)
			c.FSAfterOpen = true
		default:
			c.UUID = found.UUID
		}
		// The group is nothing at boot without its members open.
		if err := pl.planCrypttab(c, e.Discard, m.path); err != nil {
			return nil, nil, err
		}
		crypts = append(crypts, c)
		m.path = c.Mapper
		if m.part.SizeBytes > luksHeaderBytes {
			m.part.SizeBytes -= luksHeaderBytes
		}
		out[i] = m
	}
	return out, crypts, nil
}

// probe reads the signatures on dev.
func (pl Planner) probe(dev string) ([]probe.Signature, error) {
	f, err := pl.HostOrLive().OpenDevice(dev, false)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", dev, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", dev, err)
	}
	sigs, err := disk.ProbeSignatures(f, int64(size))
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", dev, err)
	}
	return sigs, nil
}
