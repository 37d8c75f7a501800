package hwinfo

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// ghwSnapshots finds the real host snapshots shipped in ghw's repository.
func ghwSnapshots(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		testenv.SkipOrFail(t, "go env GOMODCACHE: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com/jaypipes/ghw@v0.27.0/testdata/snapshots")
	snaps, _ := filepath.Glob(filepath.Join(dir, "linux-*.tar.gz"))
	if len(snaps) == 0 {
		// go test downloads ghw with its testdata, so a missing snapshot
		// is a broken module cache, not a machine without a facility.
		testenv.SkipOrFail(t, "no ghw snapshots in %s (module cache without ghw v0.27.0 testdata)", dir)
	}
	return snaps
}

// TestGhwSnapshots reads the real machines ghw captured and checks that
// what comes back is sane: every listed disk has a size, sector sizes the
// kernel could report, and a transport that matches its sysfs path.
func TestGhwSnapshots(t *testing.T) {
	for _, snap := range ghwSnapshots(t) {
		name := strings.TrimSuffix(filepath.Base(snap), ".tar.gz")
		t.Run(name, func(t *testing.T) {
			root := fastTempDir(t)
			if err := untar(snap, root); err != nil {
				t.Fatalf("unpack: %v", err)
			}
			h, err := Read(context.Background(), Options{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			// The snapshots hold no hostname, kernel or os-release: those
			// are reported as warnings, not filled with anything.
			if h.Hostname != "" || h.Kernel != "" || !hasWarning(h, "hostname unknown") || !hasWarning(h, "kernel release unknown") {
				t.Errorf("hostname %q kernel %q warnings %q", h.Hostname, h.Kernel, h.Warnings)
			}
			if h.CPU.Threads <= 0 {
				t.Errorf("cpu threads = %d", h.CPU.Threads)
			}
			if h.CPU.Cores > h.CPU.Threads {
				t.Errorf("cores %d > threads %d", h.CPU.Cores, h.CPU.Threads)
			}
			if h.Memory.TotalBytes < 64<<20 {
				t.Errorf("memory = %d", h.Memory.TotalBytes)
			}
			for _, d := range h.Disks {
				if d.SizeBytes == 0 || d.SizeBytes%512 != 0 {
					t.Errorf("%s: size %d", d.Name, d.SizeBytes)
				}
				// ghw's snapshots leave out queue/*_block_size: unknown is 0.
				if d.LogicalSectorBytes != 0 && !validSector(d.LogicalSectorBytes) || d.PhysicalSectorBytes != 0 && !validSector(d.PhysicalSectorBytes) {
					t.Errorf("%s: sectors %d/%d", d.Name, d.LogicalSectorBytes, d.PhysicalSectorBytes)
				}
				if want := snapshotTransport(root, d.Name); want != "" && d.Transport != want {
					t.Errorf("%s: transport %q, want %q", d.Name, d.Transport, want)
				}
				if strings.HasPrefix(d.Name, "zram") || strings.HasPrefix(d.Name, "sr") {
					t.Errorf("%s listed without All", d.Name)
				}
				for _, p := range d.Partitions {
					if p.Number <= 0 || p.StartBytes+p.SizeBytes > d.SizeBytes {
						t.Errorf("%s: partition %+v outside disk", p.Name, p)
					}
				}
				t.Logf("%s %s %s %d %q %q virtual=%v", d.Name, d.Transport, d.Media, d.SizeBytes, d.Vendor, d.Model, d.Virtual)
			}
		})
	}
}

// fastTempDir prefers tmpfs: unpacking thousands of sysfs files onto a
// disk-backed overlay takes seconds per snapshot.
func fastTempDir(t *testing.T) string {
	if dir, err := os.MkdirTemp("/dev/shm", "hwinfo-snap-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return t.TempDir()
}

func hasWarning(h *Host, sub string) bool {
	for _, w := range h.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func validSector(n uint64) bool {
	return n >= 512 && n <= 65536 && n&(n-1) == 0
}

// snapshotTransport derives the expected bus independently of transport():
// from the path components the kernel puts between the PCI device and the disk.
func snapshotTransport(root, name string) string {
	target, err := os.Readlink(filepath.Join(root, "sys/block", name))
	if err != nil {
		return ""
	}
	switch {
	case strings.Contains(target, "/nvme/"):
		return "nvme"
	case strings.Contains(target, "/virtio") && !strings.Contains(target, "/host"):
		return "virtio"
	case strings.Contains(target, "/ata") && strings.Contains(target, "/host"):
		return "sata"
	}
	return ""
}

// untar unpacks a gzip'd tar with its symlinks, refusing entries that would
// land outside dir.
func untar(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, hdr.Name)
		if !strings.HasPrefix(dst, filepath.Clean(dir)+string(os.PathSeparator)) {
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(hdr.Linkname, dst); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}
