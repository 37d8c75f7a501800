package hwinfo

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mangle escapes a path as the kernel does in mountinfo and swaps
// (fs/proc_namespace.c: " \t\n\\" as octal).
func mangle(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\\':
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// renderOSRelease writes kv back in the os-release(5) shell syntax.
func renderOSRelease(kv map[string]string) []byte {
	var b strings.Builder
	for k, v := range kv {
		var q strings.Builder
		for i := 0; i < len(v); i++ {
			if strings.IndexByte("\"\\$`", v[i]) >= 0 {
				q.WriteByte('\\')
			}
			q.WriteByte(v[i])
		}
		fmt.Fprintf(&b, "%s=\"%s\"\n", k, q.String())
	}
	return []byte(b.String())
}

// FuzzHostFiles feeds the files hwinfo parses itself (os-release, cpuinfo,
// mountinfo) through the parsers and through a reader over a tree holding
// them, plus a mount point name through the kernel's escaping.
// Properties: os-release re-renders and re-parses to the same keys; every
// mountinfo line accepted has a major:minor; a mount point of any bytes,
// escaped as the kernel does, parses back to itself; cpuinfo counts are not
// negative and "no processor entries" is warned exactly when none counted.
func FuzzHostFiles(f *testing.F) {
	root := f.TempDir()
	for _, d := range []string{"etc", "proc/self"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	r := &reader{root: root, log: slog.New(slog.DiscardHandler)}
	write := func(t *testing.T, p string, data []byte) {
		if err := os.WriteFile(filepath.Join(root, p), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, osRelease, cpuinfo, mountinfo []byte, point string) {
		kv, bad := parseOSRelease(osRelease)
		if bad < 0 || bad > strings.Count(string(osRelease), "\n")+1 {
			t.Fatalf("%d malformed lines in %d", bad, strings.Count(string(osRelease), "\n")+1)
		}
		again, badAgain := parseOSRelease(renderOSRelease(kv))
		if badAgain != 0 || len(again) != len(kv) {
			t.Fatalf("os-release %q: parsed %q, re-rendered parses as %q (%d bad)", osRelease, kv, again, badAgain)
		}
		for k, v := range kv {
			if again[k] != v {
				t.Fatalf("os-release key %q: %q, after re-rendering %q", k, v, again[k])
			}
		}

		for _, line := range strings.Split(string(mountinfo), "\n") {
			if m, ok := parseMountinfoLine(line); ok && (!isMajMin(m.MajMin) || m.FSType == "" || m.Point == "" || m.Source == "") {
				t.Fatalf("mountinfo line %q accepted as %+v", line, m)
			}
		}
		if point != "" && !strings.ContainsRune(point, 0) {
			line := "66 40 8:1 / " + mangle(point) + " rw,relatime shared:28 - xfs " + mangle(point) + " rw"
			m, ok := parseMountinfoLine(line)
			majmin := m.MajMin
			if !ok || majmin != "8:1" || m.Point != point || m.Source != point || m.FSType != "xfs" || m.MountOptions != "rw,relatime" {
				t.Fatalf("mount point %q as %q parses as %+v, %q, %v", point, line, m, majmin, ok)
			}
		}

		write(t, "etc/os-release", osRelease)
		write(t, "proc/cpuinfo", cpuinfo)
		write(t, "proc/self/mountinfo", mountinfo)
		r.warnings, r.warned = nil, nil
		o := r.readOS()
		if o.ID != kv["ID"] || o.Version != kv["VERSION_ID"] {
			t.Fatalf("readOS = %+v, parse gave %q", o, kv)
		}
		ci := r.readCPUInfo()
		if ci.threads < 0 || ci.sockets < 0 || ci.cores < 0 || (ci.hypervisor && !ci.hasFlags) {
			t.Fatalf("cpuinfo %q: %+v", cpuinfo, ci)
		}
		warned := false
		for _, w := range r.warnings {
			warned = warned || strings.Contains(w, "no processor entries")
		}
		if warned != (ci.threads == 0) {
			t.Fatalf("cpuinfo %q: %d threads, warnings %q", cpuinfo, ci.threads, r.warnings)
		}
		for majmin, ms := range r.readMountinfo() {
			if !strings.Contains(majmin, ":") || len(ms) == 0 {
				t.Fatalf("mountinfo index %q: %+v", majmin, ms)
			}
		}
	})
}

// Found by FuzzHostFiles: the line was split with strings.Fields, so a
// mount point holding a byte the kernel does not escape but unicode calls
// space (U+00A0, \v, \r, \f) was cut in two and the fields shifted.
func TestMountinfoPointWithUnescapedSpace(t *testing.T) {
	for _, point := range []string{"/mnt/my\u00a0disk", "/mnt/a\vb", "/mnt/a\rb", "/srv/backup copy"} {
		line := "66 40 8:1 / " + mangle(point) + " rw,relatime shared:28 - xfs /dev/sda1 rw,attr2"
		m, ok := parseMountinfoLine(line)
		majmin := m.MajMin
		if !ok || majmin != "8:1" || m.Point != point || m.Source != "/dev/sda1" || m.MountOptions != "rw,relatime" || m.FSType != "xfs" {
			t.Errorf("%q: %+v %q %v", line, m, majmin, ok)
		}
	}
}

// Found by FuzzHostFiles once lines were split on single spaces: runs of
// spaces made empty fields, and a line of blanks around ":" and "-" was
// taken as a mount without a type, point or source.
func TestMountinfoLineWithEmptyFields(t *testing.T) {
	for _, line := range []string{
		"  :    -  ",
		"36 35 98:0 /mnt1 /mnt2 rw - ext3",
		"36 35 a:b /mnt1 /mnt2 rw - ext3 /dev/root rw",
		"36 35 98:0 /mnt1  rw - ext3 /dev/root rw",
		"36 35 98:0 /mnt1 /mnt2 rw -  /dev/root rw",
		"36 35 98:0 /mnt1 /mnt2 rw - ext3  rw",
	} {
		if m, ok := parseMountinfoLine(line); ok {
			t.Errorf("%q accepted as %+v", line, m)
		}
	}
}
