package probe

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// UsedBytes against the file systems' own tools: dumpe2fs's block and
// free counts, xfs_db's dblocks, fdblocks and logblocks. Each file system
// is made in an image file with 24 MiB of files in it (mke2fs -d,
// mkfs.xfs -p), so no mount and no root are needed.
func TestUsedBytesAgainstTools(t *testing.T) {
	for _, prog := range []string{"mkfs.ext4", "dumpe2fs", "mkfs.xfs", "xfs_db"} {
		if _, err := exec.LookPath(prog); err != nil {
			testenv.SkipOrFail(t, "%s not installed: %v", prog, err)
		}
	}
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	os.Mkdir(files, 0o755)
	for i, n := range []int{16 << 20, 8 << 20} {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(j*7 + i)
		}
		os.WriteFile(filepath.Join(files, "f"+strconv.Itoa(i)), b, 0o644)
	}
	num := func(t *testing.T, re, out string) uint64 {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %s in:\n%s", re, out)
		}
		n, _ := strconv.ParseUint(m[1], 10, 64)
		return n
	}
	probeImage := func(t *testing.T, img, typ string) Signature {
		t.Helper()
		f, err := os.Open(img)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fi, _ := f.Stat()
		sigs, err := Probe(f, fi.Size())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sigs {
			if s.Type == typ {
				return s
			}
		}
		t.Fatalf("no %s in %+v", typ, sigs)
		return Signature{}
	}

	t.Run("ext4", func(t *testing.T) {
		img := filepath.Join(dir, "ext4.img")
		testenv.MustRun(t, "mkfs.ext4", "-q", "-F", "-d", files, img, "64M")
		out := testenv.MustRun(t, "dumpe2fs", "-h", img)
		want := (num(t, `(?m)^Block count:\s+(\d+)`, out) - num(t, `(?m)^Free blocks:\s+(\d+)`, out)) * num(t, `(?m)^Block size:\s+(\d+)`, out)
		if got := probeImage(t, img, "ext4").UsedBytes; got != want || got < 24<<20 {
			t.Errorf("ext4 used %d bytes; dumpe2fs says %d (and the files are 24 MiB)", got, want)
		}
		if got := probeImage(t, img, "ext4").SizeBytes; got != 64<<20 {
			t.Errorf("ext4 size %d bytes, want the image's 64 MiB", got)
		}
	})
	t.Run("xfs", func(t *testing.T) {
		img := filepath.Join(dir, "xfs.img")
		proto := filepath.Join(dir, "proto")
		os.WriteFile(proto, []byte("/dev/null\n0 0\nd--755 0 0\nf0 ---644 0 0 "+filepath.Join(files, "f0")+
			"\nf1 ---644 0 0 "+filepath.Join(files, "f1")+"\n$\n"), 0o644)
		f, _ := os.Create(img)
		f.Truncate(320 << 20)
		f.Close()
		testenv.MustRun(t, "mkfs.xfs", "-q", "-f", "-p", proto, img)
		out := testenv.MustRun(t, "xfs_db", "-r", "-c", "sb 0", "-c", "p dblocks fdblocks logblocks blocksize", img)
		want := (num(t, `dblocks = (\d+)`, out) - num(t, `fdblocks = (\d+)`, out) - num(t, `logblocks = (\d+)`, out)) * num(t, `blocksize = (\d+)`, out)
		if got := probeImage(t, img, "xfs").UsedBytes; got != want || got < 24<<20 {
			t.Errorf("xfs used %d bytes; xfs_db says %d (and the files are 24 MiB)", got, want)
		}
		if got := probeImage(t, img, "xfs").SizeBytes; got != 320<<20 {
			t.Errorf("xfs size %d bytes, want the image's 320 MiB", got)
		}
	})
}
