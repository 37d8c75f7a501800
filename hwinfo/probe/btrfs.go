package probe

const btrfsSuperOffset = 64 << 10

// probeBtrfs reads the primary superblock at 64 KiB; fsid is UUID.
func probeBtrfs(d *device) []Signature {
	sb := d.read(btrfsSuperOffset, 4096)
	if sb == nil || string(sb[64:72]) != "_BHRfS_M" {
		return nil
	}
	return []Signature{{Type: "btrfs", Usage: UsageFilesystem, Label: cString(sb[299 : 299+256]),
		UUID: formatUUID(sb[32:48]), Offset: btrfsSuperOffset + 64, Magic: clone(sb[64:72])}}
}
