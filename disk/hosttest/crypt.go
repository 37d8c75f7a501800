package hosttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// LUKS2 volumes of the fake machine (cryptsetup luksFormat, open, close,
// erase). The header is what the prober reads (magic, version, UUID); the
// opened mapping is a device-mapper device of its own bytes, kept across
// close and open, held on its backing device as the kernel shows it.

// luksHeaderBytes is the room LUKS2's default header takes at the start.
const luksHeaderBytes = 16 << 20

type luksVol struct {
	key    []byte // nil once erased: no key slot opens it
	sector int
	tokens []string // systemd-tpm2 once a slot is sealed to the TPM
	store  *sparse
	size   uint64
	// dm is the kernel name it was last open as: open again, it gets it
	// back when free, so what LVM keeps of its members still names it.
	dm string
}

// luksHeader is a LUKS2 header as cryptsetup writes one, cut to what the
// prober reads: the binary header with its checksum and the JSON area
// (segment, key slot, digest, and the tokens enrolled).
func luksHeader(uuid string, sector int, tokens []string) []byte {
	const size = 16 << 10
	h := make([]byte, size)
	copy(h, "LUKS\xba\xbe")
	binary.BigEndian.PutUint16(h[6:], 2)
	binary.BigEndian.PutUint64(h[8:], size)
	binary.BigEndian.PutUint64(h[16:], uint64(1+len(tokens)))
	copy(h[72:], "sha256")
	copy(h[168:208], uuid)
	tk := map[string]any{}
	for i, t := range tokens {
		tk[strconv.Itoa(i)] = map[string]any{"type": t, "keyslots": []string{strconv.Itoa(i + 1)}}
	}
	j, _ := json.Marshal(map[string]any{
		"keyslots": map[string]any{"0": map[string]any{"type": "luks2", "key_size": 64}},
		"tokens":   tk,
		"segments": map[string]any{"0": map[string]any{"type": "crypt", "offset": strconv.Itoa(luksHeaderBytes), "size": "dynamic",
			"iv_tweak": "0", "encryption": "aes-xts-plain64", "sector_size": sector}},
		"digests": map[string]any{"0": map[string]any{"type": "pbkdf2", "keyslots": []string{"0"}, "segments": []string{"0"}}},
		"config":  map[string]any{"json_size": strconv.Itoa(size - 4096), "keyslots_size": strconv.Itoa(luksHeaderBytes - 2*size)},
	})
	copy(h[4096:], j)
	sum := sha256.Sum256(h)
	copy(h[448:], sum[:])
	return h
}

// readLUKSUUID is the UUID of the LUKS header at the start of b, "" for none.
func readLUKSUUID(b *blockDev) string {
	h := make([]byte, 512)
	b.store.readAt(h, b.offset)
	if string(h[:6]) != "LUKS\xba\xbe" {
		return ""
	}
	return string(bytes.TrimRight(h[168:208], "\x00"))
}

func (h *Host) keyFile(args []string) ([]byte, bool) {
	p, ok := flagValue(args, "--key-file")
	if !ok {
		return nil, false
	}
	if p == "-" {
		return h.stdin, len(h.stdin) > 0
	}
	n, _, err := h.fs.resolve(p, true)
	if err != nil || !n.mode.IsRegular() || len(n.data) == 0 {
		return nil, false
	}
	return n.data, true
}

func (h *Host) cryptsetup(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	if h.luks == nil {
		h.luks = map[string]*luksVol{}
	}
	if len(args) == 0 {
		return fail(1, "cryptsetup: no action")
	}
	var pos []string // the positional arguments after the action
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--batch-mode" || a == "-q" || a == "--allow-discards":
		case strings.HasPrefix(a, "--") && !strings.Contains(a, "="):
			i++
		case !strings.HasPrefix(a, "-"):
			pos = append(pos, a)
		}
	}
	switch args[0] {
	case "--version":
		return []byte("cryptsetup 2.6.1 flags: UDEV BLKID KEYRING KERNEL_CAPI\n"), nil
	case "luksFormat":
		if len(pos) != 1 {
			return fail(1, "cryptsetup luksFormat: one device")
		}
		key, ok := h.keyFile(args)
		if !ok {
			return fail(1, "Failed to open key file.")
		}
		b, err := h.deviceAt(pos[0])
		if err != nil {
			return fail(4, "Device "+pos[0]+" does not exist or access denied.")
		}
		if b.claimed || b.exclusive || h.mountedDev(b) || h.holdersOf(b) {
			return fail(5, "Cannot format device "+pos[0]+" in use.")
		}
		uuid, _ := flagValue(args, "--uuid")
		sector, _ := flagValue(args, "--sector-size")
		sec, _ := strconv.Atoi(sector)
		if sec == 0 {
			sec = 512
		}
		if b.size%uint64(sec) != 0 {
			return fail(1, "Device size is not aligned to requested sector size.")
		}
		if b.size <= luksHeaderBytes {
			return fail(1, "Device "+pos[0]+" is too small.")
		}
		b.store.writeAt(luksHeader(uuid, sec, nil), b.offset)
		h.luks[uuid] = &luksVol{key: append([]byte(nil), key...), sector: sec, store: newSparse(), size: b.size - luksHeaderBytes}
		return nil, nil
	case "open", "luksOpen":
		if len(pos) != 2 {
			return fail(1, "cryptsetup open: a device and a name")
		}
		b, v, out, err := h.luksAt(pos[0], fail)
		if v == nil {
			return out, err
		}
		key, ok := h.keyFile(args)
		if !ok || v.key == nil || !bytes.Equal(key, v.key) {
			return fail(2, "No key available with this passphrase.")
		}
		name := pos[1]
		if _, _, err := h.fs.resolve("/dev/mapper/"+name, false); err == nil {
			return fail(5, "Device "+name+" already exists.")
		}
		for _, st := range h.stacks {
			if st.kind == "crypt" && st.members[0] == b {
				return fail(5, "Device "+pos[0]+" is already in use.")
			}
		}
		i := 0
		for ; h.devs[fmt.Sprintf("dm-%d", i)] != nil; i++ {
		}
		if v.dm != "" && h.devs[v.dm] == nil {
			fmt.Sscanf(v.dm, "dm-%d", &i)
		}
		dm := fmt.Sprintf("dm-%d", i)
		v.dm = dm
		dev := &blockDev{name: dm, major: 253, minor: uint32(i), size: v.size, sector: uint64(v.sector), store: v.store, parts: map[int]*blockDev{}}
		h.addDev(dev)
		sys := h.sysDir(dev)
		h.fs.put(sys+"/dm/name", &node{mode: 0o444, data: []byte(name + "\n")})
		h.fs.put(sys+"/dm/uuid", &node{mode: 0o444, data: []byte("CRYPT-LUKS2-" + strings.ReplaceAll(readLUKSUUID(b), "-", "") + "-" + name + "\n")})
		h.stacks[dm] = &stackDev{kind: "crypt", name: name, members: []*blockDev{b}}
		h.fs.mkdirAll(sys + "/slaves/" + b.name)
		h.fs.mkdirAll(h.sysDir(b) + "/holders/" + dm)
		h.fs.mkdirAll("/dev/mapper")
		h.fs.put("/dev/mapper/"+name, &node{mode: fs.ModeSymlink | 0o777, link: "/dev/" + dm})
		return nil, nil
	case "close", "luksClose":
		if len(pos) != 1 {
			return fail(1, "cryptsetup close: one name")
		}
		name := strings.TrimPrefix(pos[0], "/dev/mapper/")
		for dm, st := range h.stacks {
			if st.kind != "crypt" || st.name != name {
				continue
			}
			b := h.devs[dm]
			if h.mountedDev(b) || h.holdersOf(b) {
				return fail(5, "Device "+name+" is still in use.")
			}
			h.dropStack(b, st)
			h.fs.removeAll("/dev/mapper/" + name)
			return nil, nil
		}
		return fail(4, "Device "+name+" is not active.")
	case "resize":
		// Online: the open mapping of that name takes what its backing
		// device has past the header.
		if len(pos) != 1 {
			return fail(1, "cryptsetup resize: one name")
		}
		for dm, st := range h.stacks {
			if st.kind != "crypt" || st.name != pos[0] {
				continue
			}
			back := st.members[0]
			v := h.luks[readLUKSUUID(back)]
			if v == nil || back.size <= luksHeaderBytes {
				return fail(1, "Device "+pos[0]+" is not a valid LUKS device.")
			}
			v.size = back.size - luksHeaderBytes
			h.devs[dm].size = v.size
			h.fs.put(h.sysDir(h.devs[dm])+"/size", &node{mode: 0o444, data: fmt.Appendf(nil, "%d\n", v.size/512)})
			return nil, nil
		}
		return fail(4, "Device "+pos[0]+" is not active.")
	case "erase", "luksErase":
		if len(pos) != 1 {
			return fail(1, "cryptsetup erase: one device")
		}
		_, v, out, err := h.luksAt(pos[0], fail)
		if v == nil {
			return out, err
		}
		v.key = nil
		return nil, nil
	}
	return fail(1, "cryptsetup "+args[0]+" is not faked")
}

// luksAt is the device at p and its LUKS volume; nil, and cryptsetup's
// failure, when either is missing.
func (h *Host) luksAt(p string, fail func(int, string) ([]byte, error)) (*blockDev, *luksVol, []byte, error) {
	b, err := h.deviceAt(p)
	if err != nil {
		out, err := fail(4, "Device "+p+" does not exist or access denied.")
		return nil, nil, out, err
	}
	v := h.luks[readLUKSUUID(b)]
	if v == nil {
		out, err := fail(1, "Device "+p+" is not a valid LUKS device.")
		return nil, nil, out, err
	}
	return b, v, nil, nil
}

// cryptenroll is systemd-cryptenroll --unlock-key-file KEY
// --tpm2-device=auto DEVICE: a key slot sealed to the machine's TPM 2.0,
// its token written into the header.
func (h *Host) cryptenroll(args []string, fail func(int, string) ([]byte, error)) ([]byte, error) {
	if len(args) == 1 && args[0] == "--version" {
		return []byte("systemd 252 (252.39-1~deb12u2)\n+PAM +AUDIT +SELINUX +APPARMOR +IMA +SMACK +SECCOMP +GCRYPT -GNUTLS +OPENSSL +ACL +BLKID +CURL +ELFUTILS +FIDO2 +IDN2 -IDN +IPTC +KMOD +LIBCRYPTSETUP +LIBFDISK +PCRE2 -PWQUALITY +P11KIT +QRENCODE +TPM2 +BZIP2 +LZ4 +XZ +ZLIB +ZSTD -BPF_FRAMEWORK -XKBCOMMON +UTMP +SYSVINIT default-hierarchy=unified\n"), nil
	}
	if dev, _ := flagValue(args, "--tpm2-device"); dev != "auto" {
		return fail(1, "systemd-cryptenroll: only --tpm2-device=auto is faked")
	}
	if _, _, err := h.fs.resolve("/sys/class/tpm/tpm0", true); err != nil {
		return fail(1, "No TPM2 devices found.")
	}
	p := args[len(args)-1]
	b, v, out, err := h.luksAt(p, fail)
	if v == nil {
		return out, err
	}
	path, _ := flagValue(args, "--unlock-key-file")
	n, _, err := h.fs.resolve(path, true)
	if err != nil || v.key == nil || !bytes.Equal(n.data, v.key) {
		return fail(1, "Failed to unlock LUKS superblock: Operation not permitted")
	}
	v.tokens = append(v.tokens, "systemd-tpm2")
	b.store.writeAt(luksHeader(readLUKSUUID(b), v.sector, v.tokens), b.offset)
	return []byte("New TPM2 token enrolled as key slot 1.\n"), nil
}
