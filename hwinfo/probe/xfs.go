package probe

// probeXFS follows libblkid's xfs_verify_sb: the magic alone is four
// printable bytes, so the geometry must also make sense. A bad v5 CRC does
// not hide the superblock, as it does not for blkid -p and wipefs (which
// probe with BLKID_SUBLKS_BADCSUM): damaged is not empty.
func probeXFS(d *device) []Signature {
	sb := d.read(0, 512)
	if sb == nil || string(sb[:4]) != "XFSB" {
		return nil
	}
	blocksize := uint64(be32(sb[4:]))
	dblocks := be64(sb[8:])
	rextsize := uint64(be32(sb[80:]))
	agblocks := uint64(be32(sb[84:]))
	agcount := uint64(be32(sb[88:]))
	sectsize := uint64(be16(sb[102:]))
	inodesize := uint64(be16(sb[104:]))
	blocklog, sectlog, inodelog, inopblog := uint(sb[120]), uint(sb[121]), uint(sb[122]), uint(sb[123])
	imaxPct := sb[127]
	switch {
	case agcount == 0,
		sectsize < 512 || sectsize > 32768 || sectlog < 9 || sectlog > 15 || sectsize != 1<<sectlog,
		blocksize < 512 || blocksize > 65536 || blocklog < 9 || blocklog > 16 || blocksize != 1<<blocklog,
		inodesize < 256 || inodesize > 2048 || inodelog < 8 || inodelog > 11 || inodesize != 1<<inodelog,
		blocklog-inodelog != inopblog,
		rextsize*blocksize > 1<<30 || rextsize*blocksize < 4096,
		imaxPct > 100,
		dblocks == 0 || dblocks > agcount*agblocks || dblocks < (agcount-1)*agblocks+64:
		return nil
	}
	s := Signature{Type: "xfs", Usage: UsageFilesystem, UUID: formatUUID(sb[32:48]), Offset: 0, Magic: clone(sb[:4])}
	if sb[108] != 0 {
		s.Label = cString(sb[108:120])
	}
	// sb_fdblocks at 144; an internal log (sb_logstart at 48 not 0) of
	// sb_logblocks at 96 is not space for data.
	used := dblocks - min(be64(sb[144:]), dblocks)
	if be64(sb[48:]) != 0 {
		used -= min(uint64(be32(sb[96:])), used)
	}
	s.UsedBytes, s.SizeBytes = used*blocksize, dblocks*blocksize
	return []Signature{s}
}
