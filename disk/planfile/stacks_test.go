package planfile

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/stack"
)

func TestStacksExample(t *testing.T) {
	p, err := Load("testdata/stacks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Disks) != 3 || p.Disks[2].Select.Transport != "nvme" || p.Disks[2].Select.SizeMin != 200<<30 {
		t.Fatalf("disks %+v", p.Disks)
	}
	if ps := p.Disks[2].Partitions; ps[0].FS != "swap" || !ps[0].Persist || ps[1].Use != "lvm:fast" || p.Disks[0].Partitions[0].Use != "raid:data" {
		t.Errorf("partitions %+v", ps)
	}
	st := p.Stacks()
	if len(st.Arrays) != 1 || st.Arrays[0].Level != 1 || !reflect.DeepEqual(st.Arrays[0].Volume, stack.VolumeSpec{FS: "xfs", Label: "data", Mount: "/data", Persist: true}) || st.Arrays[0].Origin != "testdata/stacks.yaml:31" {
		t.Errorf("arrays %+v", st.Arrays)
	}
	if len(st.Groups) != 1 || len(st.Groups[0].Volumes) != 2 || st.Groups[0].Volumes[0].SizeBytes != 100<<30 || st.Groups[0].Volumes[1].SizeBytes != 0 || st.Groups[0].Volumes[1].Volume.Mount != "/var/lib/vm" {
		t.Errorf("groups %+v", st.Groups)
	}
}

// The bad input: exit 2 (ErrUsage) with file:line.
func TestStacksBadInput(t *testing.T) {
	head := "version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, use: raid:data}]\n  - select: {serial: B}\n    partitions: [{size: rest, use: raid:data}]\n"
	for name, c := range map[string]struct{ doc, want string }{
		"unknown level":   {head + "raid:\n  - {name: data, level: 3, filesystem: {fs: xfs}}\n", `plan.yaml:8: raid[0].level: unknown RAID level 3`},
		"too few members": {head + "raid:\n  - {name: data, level: 5, filesystem: {fs: xfs}}\n", `plan.yaml:8: raid data: level 5 needs at least 3 members, 2 partitions say use: raid:data`},
		"swap with mount": {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions:\n      - {size: 1G, fs: swap, mount: /swap}\n", `plan.yaml:5: disks[0].partitions[0].mount: a swap partition has no mount point`},
		"undeclared use":  {head, `plan.yaml:4: partition use raid:data: no raid entry with name: data in this plan`},
		"use with fs":     {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions:\n      - {size: rest, use: raid:x, fs: xfs}\n", `a partition with use: raid:x has no fs of its own`},
		"rest not last":   {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, use: lvm:v}]\nlvm:\n  - vg: v\n    volumes:\n      - {name: a, size: rest, fs: xfs}\n      - {name: b, size: 1G, fs: xfs}\n", `plan.yaml:8: lvm[0].volumes[0].size: "rest" is allowed only for the last volume`},
		"bad transport":   {"version: 1\ndisks:\n  - select: {transport: firewire}\n    partitions: [{size: rest, fs: xfs}]\n", `plan.yaml:3: disks[0].select.transport: "firewire": want one of nvme`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("plan.yaml", []byte(c.doc))
			if !errors.Is(err, disk.ErrUsage) || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want bad input containing %q", err, c.want)
			}
		})
	}
}

func TestCacheSection(t *testing.T) {
	doc := `version: 1
disks:
  - select: {serial: HDD}
    partitions: [{size: rest, use: origin:srv}]
  - select: {transport: nvme}
    partitions:
      - {size: 16G, use: cache:srv}
      - {size: rest, fs: xfs, mount: /scratch}
cache:
  - name: srv
    kind: bcache
    mode: writeback
    filesystem: {fs: xfs, label: srv, mount: /srv, persist: true}
`
	p, err := Parse("plan.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	st := p.Stacks()
	if len(st.Caches) != 1 || st.Caches[0].Kind != "bcache" || st.Caches[0].Mode != "writeback" || st.Caches[0].Origin != "plan.yaml:10" ||
		!reflect.DeepEqual(st.Caches[0].Volume, stack.VolumeSpec{FS: "xfs", Label: "srv", Mount: "/srv", Persist: true}) {
		t.Errorf("caches %+v", st.Caches)
	}
	if p.Disks[1].Partitions[0].Use != "cache:srv" || p.Disks[0].Partitions[0].Use != "origin:srv" {
		t.Errorf("partitions %+v", p.Disks)
	}
	head := "version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, use: origin:srv}]\n  - select: {serial: B}\n    partitions: [{size: rest, use: cache:srv}]\n"
	for name, c := range map[string]struct{ doc, want string }{
		"unknown kind":    {head + "cache:\n  - {name: srv, kind: flashcache, filesystem: {fs: xfs}}\n", `plan.yaml:8: cache[0].kind: "flashcache": want lvmcache, writecache or bcache`},
		"unknown mode":    {head + "cache:\n  - {name: srv, mode: writearound, filesystem: {fs: xfs}}\n", `plan.yaml:8: cache[0].mode: "writearound"`},
		"writecache wt":   {head + "cache:\n  - {name: srv, kind: writecache, filesystem: {fs: xfs}}\n", `plan.yaml:8: cache srv: writecache caches writes only`},
		"undeclared":      {head, `plan.yaml:4: partition use origin:srv: no cache entry with name: srv in this plan`},
		"no cache part":   {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, use: origin:srv}]\ncache:\n  - {name: srv, filesystem: {fs: xfs}}\n", `plan.yaml:6: cache srv: no partition says use: cache:srv`},
		"same disk":       {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: 1G, use: cache:srv}, {size: rest, use: origin:srv}]\ncache:\n  - {name: srv, filesystem: {fs: xfs}}\n", `both on disks[0] (line 3)`},
		"bad use":         {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, use: bcache:srv}]\n", `want raid:NAME, lvm:VG, origin:CACHE or cache:CACHE`},
		"use with fs":     {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, use: cache:srv, fs: xfs}]\n", `has no fs of its own`},
		"missing fs":      {head + "cache:\n  - {name: srv}\n", `plan.yaml:8: cache[0]: missing "filesystem"`},
		"declared twice":  {head + "cache:\n  - {name: srv, filesystem: {fs: xfs}}\n  - {name: srv, filesystem: {fs: ext4}}\n", `cache srv is already declared at line 8`},
		"mount used once": {head + "cache:\n  - {name: srv, filesystem: {fs: xfs, mount: /a}}\n  - {name: x, filesystem: {fs: xfs, mount: /a}}\n", `mount point /a is already used`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("plan.yaml", []byte(c.doc))
			if !errors.Is(err, disk.ErrUsage) || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want bad input containing %q", err, c.want)
			}
		})
	}
}

func TestEncryptInPlan(t *testing.T) {
	head := "version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, use: raid:data}]\n  - select: {serial: B}\n    partitions: [{size: rest, use: raid:data}]\n  - select: {serial: C}\n    partitions: [{size: rest, use: lvm:vault}]\n"
	doc := head + `raid:
  - name: data
    level: 1
    filesystem: {fs: xfs, mount: /data, persist: true, encrypt: {key_file: /etc/diskprep/keys/data.key}}
lvm:
  - vg: vault
    encrypt: {key_file: /etc/k/vault.key}
    volumes:
      - {name: home, size: rest, fs: ext4, mount: /home2, encrypt: {key_file: /etc/k/home.key, name: home, discard: true}}
`
	p, err := Parse("plan.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	st := p.Stacks()
	if e := st.Arrays[0].Volume.Encrypt; e == nil || *e != (crypt.Spec{KeyFile: "/etc/diskprep/keys/data.key"}) || st.Arrays[0].Volume.FS != "xfs" {
		t.Errorf("array volume %+v", st.Arrays[0].Volume)
	}
	if e := st.Groups[0].Encrypt; e == nil || e.KeyFile != "/etc/k/vault.key" {
		t.Errorf("group encrypt %+v", st.Groups[0])
	}
	if e := st.Groups[0].Volumes[0].Volume.Encrypt; e == nil || *e != (crypt.Spec{KeyFile: "/etc/k/home.key", Name: "home", Discard: true}) {
		t.Errorf("volume %+v", st.Groups[0].Volumes[0].Volume)
	}
	head = "version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, use: raid:data}]\n  - select: {serial: B}\n    partitions: [{size: rest, use: raid:data}]\n"
	for name, c := range map[string]struct{ doc, want string }{
		"key file and passphrase": {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, fs: xfs, encrypt: {key_file: /k, passphrase: true}}]\n", "a key file or a passphrase, not both"},
		"neither":                 {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, fs: xfs, encrypt: {name: x}}]\n", `missing "key_file"`},
		"encrypted swap":          {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, fs: swap, encrypt: {key_file: /k}}]\n", "swap is not encrypted"},
		"encrypted member":        {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, use: lvm:v, encrypt: {key_file: /k}}]\nlvm:\n  - {vg: v, volumes: [{name: a, size: rest, fs: xfs}]}\n", "is encrypted by its stack's entry"},
		"mount used twice":        {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: 1G, fs: xfs, mount: /d}, {size: rest, fs: xfs, mount: /d, encrypt: {key_file: /k}}]\n", "mount point /d is already used"},
		"partition key file":      {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, fs: xfs, encrypt: {key_file: k}}]\n", `key file "k": give a clean absolute path`},
		"no key file":             {head + "raid:\n  - {name: data, level: 1, filesystem: {fs: xfs, encrypt: {name: x}}}\n", `plan.yaml:8: raid[0].filesystem.encrypt: missing "key_file"`},
		"tpm2 without a key file": {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, fs: xfs, encrypt: {passphrase: true, tpm2: true}}]\n", "tpm2 needs a key file"},
		"sector 1024":             {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, fs: xfs, encrypt: {key_file: /k, sector_bytes: 1024}}]\n", "sector size 1024: 512 or 4096"},
		"sector word":             {"version: 1\ndisks:\n  - select: {serial: A}\n    partitions: [{size: rest, fs: xfs, encrypt: {key_file: /k, sector_bytes: big}}]\n", "sector_bytes: 512 or 4096"},
		"unknown key":             {head + "raid:\n  - {name: data, level: 1, filesystem: {fs: xfs, encrypt: {key_file: /k, cipher: x}}}\n", `cipher`},
		"relative key":            {head + "raid:\n  - {name: data, level: 1, filesystem: {fs: xfs, encrypt: {key_file: k}}}\n", `key file "k": give a clean absolute path`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("plan.yaml", []byte(c.doc))
			if !errors.Is(err, disk.ErrUsage) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want bad input containing %q", err, c.want)
			}
		})
	}
}

// encrypt: on a partition: the partition goes to LUKS2 (use crypt:KEY)
// and its file system to the mapping, with what the entry said of it.
func TestEncryptedPartitionInPlan(t *testing.T) {
	doc := `version: 1
disks:
  - select: {serial: A}
    partitions:
      - {size: 1G, fs: xfs, mount: /plain}
      - {size: rest, fs: ext4, label: vault, mount: /vault, persist: true, encrypt: {key_file: /etc/k/vault.key}}
  - select: {serial: B}
    partitions: [{size: rest, fs: xfs, mount: /asked, encrypt: {passphrase: true}}]
`
	p, err := Parse("plan.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	parts := p.Disks[0].Partitions
	if parts[0].FS != "xfs" || parts[0].Use != "" || parts[1].Use != "crypt:line6" || parts[1].Label != "vault" || parts[1].FS != "" || parts[1].Mount != "" {
		t.Errorf("partitions %+v", parts)
	}
	st := p.Stacks()
	if len(st.Encrypted) != 2 || st.Encrypted[1].Volume.Encrypt == nil || *st.Encrypted[1].Volume.Encrypt != (crypt.Spec{Passphrase: true}) {
		t.Fatalf("stacks %+v", st)
	}
	e := st.Encrypted[0]
	if e.Key != "line6" || e.Origin != "plan.yaml:6" || e.Volume.FS != "ext4" || e.Volume.Label != "vault" || e.Volume.Mount != "/vault" || !e.Volume.Persist ||
		e.Volume.Encrypt == nil || *e.Volume.Encrypt != (crypt.Spec{KeyFile: "/etc/k/vault.key"}) {
		t.Errorf("encrypted partition %+v", e)
	}
	var reqs []disk.Request
	for _, d := range p.Disks {
		reqs = append(reqs, disk.Request{Device: "/dev/x", Partitions: d.Partitions})
	}
	if err := st.Validate(reqs); err != nil {
		t.Errorf("the stack request: %v", err)
	}
}
