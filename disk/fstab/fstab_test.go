package fstab

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/internal/testenv"
)

// day dates the marker lines the tests write.
var day = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestParseRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/*.fstab")
	if err != nil || len(files) < 3 {
		t.Fatalf("want at least 3 samples, got %v (%v)", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := Render(lines); !bytes.Equal(got, data) {
				t.Fatalf("round trip differs:\n got %q\nwant %q", got, data)
			}
		})
	}
}

func entries(lines []Line) []Entry {
	var out []Entry
	for _, l := range lines {
		if l.Entry != nil {
			out = append(out, *l.Entry)
		}
	}
	return out
}

func TestParseFields(t *testing.T) {
	cases := map[string][]Entry{
		"testdata/centos7.fstab": {
			{"/dev/mapper/centos-root", "/", "xfs", "defaults", 0, 0},
			{"UUID=4a3b2c1d-1234-4c5d-9e8f-0a1b2c3d4e5f", "/boot", "xfs", "defaults", 0, 0},
			{"/dev/mapper/centos-home", "/home", "xfs", "defaults", 0, 0},
			{"/dev/mapper/centos-swap", "swap", "swap", "defaults", 0, 0},
		},
		"testdata/tabs-escapes.fstab": {
			{"LABEL=media", "/srv/My Media", "ext4", "defaults,noatime", 0, 2},
			{`UUID="5D1E-0F2A"`, "/mnt/win c", "vfat", "uid=1000,gid=1000,umask=022", 0, 0},
			{"/dev/sdc1", `/mnt/odd\path`, "xfs", "", 0, 0},
			{"//nas/share", "/mnt/nas", "cifs", "credentials=/root/.smb,_netdev", 0, 0},
		},
	}
	for f, want := range cases {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if got := entries(lines); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", f, got, want)
		}
	}
}

func TestParseRejectsBinary(t *testing.T) {
	if _, err := Parse([]byte("UUID=a /x xfs defaults 0 0\n\x00\x01")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("want a line 2 NUL error, got %v", err)
	}
}

func TestEntryLine(t *testing.T) {
	got := EntryLine(Entry{Spec: "UUID=abc", File: "/srv/my data\\x", VFSType: "xfs", Options: "noatime,nofail,,defaults,noatime"})
	want := "UUID=abc\t/srv/my\\040data\\134x\txfs\tdefaults,nofail,noatime\t0\t0"
	if got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	// What EntryLine renders, Parse must read back as the same fields.
	lines, err := Parse([]byte(got + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if e := lines[0].Entry; e == nil || e.File != "/srv/my data\\x" || e.Options != "defaults,nofail,noatime" {
		t.Fatalf("parsed back %+v", e)
	}
}

func TestAddRemove(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fstab")
	orig, err := os.ReadFile("testdata/centos7.fstab")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, orig, 0o640); err != nil {
		t.Fatal(err)
	}
	e := Entry{Spec: "UUID=11111111-2222-3333-4444-555555555555", File: "/data", VFSType: "xfs", Options: "noatime"}

	changed, err := Add(path, e, day)
	if err != nil || !changed {
		t.Fatalf("Add: changed=%v err=%v", changed, err)
	}
	after, _ := os.ReadFile(path)
	want := string(orig) +
		"# diskprep: UUID=11111111-2222-3333-4444-555555555555 added 2026-11-30 (\"diskprep release\" removes this entry)\n" +
		"UUID=11111111-2222-3333-4444-555555555555\t/data\txfs\tdefaults,nofail,noatime\t0\t0\n"
	if string(after) != want {
		t.Fatalf("after Add:\n%s\nwant:\n%s", after, want)
	}
	if bak, _ := os.ReadFile(path + BackupSuffix); !bytes.Equal(bak, orig) {
		t.Fatalf("backup holds %q, want the original", bak)
	}
	for _, p := range []string{path, path + BackupSuffix} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o640 {
			t.Fatalf("%s: mode %v err %v, want 0640 kept", p, fi.Mode(), err)
		}
	}

	// Idempotent: same entry again, or with the spec spelled differently.
	for _, again := range []Entry{e, {Spec: `UUID="11111111-2222-3333-4444-555555555555"`, File: "/data/", VFSType: "xfs"}} {
		changed, err = Add(path, again, day)
		if err != nil || changed {
			t.Fatalf("second Add %+v: changed=%v err=%v", again, changed, err)
		}
	}
	if again, _ := os.ReadFile(path); string(again) != want {
		t.Fatalf("second Add changed the file:\n%s", again)
	}

	// Remove only what matches, and only managed lines.
	removed, err := Remove(path, func(x Entry) bool { return x.File == "/data" })
	if err != nil || len(removed) != 1 || removed[0].Spec != e.Spec {
		t.Fatalf("Remove: %+v %v", removed, err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
		t.Fatalf("after Remove:\n%s\nwant the original back", got)
	}
	if bak, _ := os.ReadFile(path + BackupSuffix); string(bak) != want {
		t.Fatalf("backup after Remove should hold the pre-Remove content, got %q", bak)
	}
	removed, err = Remove(path, func(Entry) bool { return true })
	if err != nil || len(removed) != 0 {
		t.Fatalf("Remove of unmanaged lines: removed %+v err %v", removed, err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
		t.Fatalf("Remove touched unmanaged lines:\n%s", got)
	}
}

func TestAddConflict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fstab")
	orig, _ := os.ReadFile("testdata/debian12.fstab")
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		e    Entry
		line string
	}{
		{Entry{Spec: "UUID=ffff", File: "/boot/efi/", VFSType: "xfs"}, "line 14"},
		{Entry{Spec: "UUID=0B1E9A56-7C2F-4D8E-B3A1-5F6E7D8C9B0A", File: "/data", VFSType: "ext4"}, "line 12"},
	}
	for _, c := range cases {
		changed, err := Add(path, c.e, day)
		if !errors.Is(err, ErrConflict) || changed || !strings.Contains(err.Error(), c.line) {
			t.Errorf("Add %+v: changed=%v err=%v, want ErrConflict naming %s", c.e, changed, err, c.line)
		}
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
		t.Fatal("a refused Add changed the file")
	}
	if _, err := os.Stat(path + BackupSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused Add left a backup: %v", err)
	}
}

// An entry already present without diskprep's marker is left alone by Add
// and never removed.
func TestUnmanagedPresent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fstab")
	orig := "UUID=abc /data xfs defaults 0 0"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := Add(path, Entry{Spec: "UUID=ABC", File: "/data", VFSType: "xfs"}, day)
	if err != nil || changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	removed, err := Remove(path, func(Entry) bool { return true })
	if err != nil || len(removed) != 0 {
		t.Fatalf("removed %+v err %v", removed, err)
	}
	if got, _ := os.ReadFile(path); string(got) != orig {
		t.Fatalf("file changed: %q", got)
	}
}

func TestMarkerOwnership(t *testing.T) {
	data := strings.Join([]string{
		"# diskprep: UUID=aaa added 2026-01-01",
		"UUID=aaa /a xfs defaults,nofail 0 0", // managed
		"# diskprep: UUID=bbb added 2026-01-01",
		"UUID=ccc /b xfs defaults,nofail 0 0", // user re-pointed it: not ours
		"# diskprep: UUID=ddd added 2026-01-01",
		"# user comment in between",
		"UUID=ddd /d xfs defaults,nofail 0 0", // marker not directly above
		"#  diskprep:   UUID=\"EEE\"   whatever",
		"UUID=eee /e ext4 noatime 0 2", // options edited: still ours
		"",
	}, "\n")
	path := filepath.Join(t.TempDir(), "fstab")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	removed, err := Remove(path, func(Entry) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range removed {
		got = append(got, e.File)
	}
	if !reflect.DeepEqual(got, []string{"/a", "/e"}) {
		t.Fatalf("removed %v, want [/a /e]", got)
	}
	after, _ := os.ReadFile(path)
	want := strings.Join([]string{
		"# diskprep: UUID=bbb added 2026-01-01",
		"UUID=ccc /b xfs defaults,nofail 0 0",
		"# diskprep: UUID=ddd added 2026-01-01",
		"# user comment in between",
		"UUID=ddd /d xfs defaults,nofail 0 0",
		"",
	}, "\n")
	if string(after) != want {
		t.Fatalf("after:\n%s\nwant:\n%s", after, want)
	}
}

func TestAddMissingFileAndNoTrailingNewline(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fstab")
	e := Entry{Spec: "UUID=x", File: "/x", VFSType: "ext4"}
	if changed, err := Add(path, e, day); err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("created fstab: %v %v", fi, err)
	}
	if _, err := os.Stat(path + BackupSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("backup made of a file that did not exist: %v", err)
	}

	path2 := filepath.Join(dir, "fstab2")
	os.WriteFile(path2, []byte("/dev/sda1 / xfs defaults 0 0"), 0o644)
	if _, err := Add(path2, e, day); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path2)
	if !strings.HasPrefix(string(got), "/dev/sda1 / xfs defaults 0 0\n# diskprep: UUID=x ") || !strings.HasSuffix(string(got), "\n") {
		t.Fatalf("got %q", got)
	}
}

func TestSymlinkedFstab(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "real", "fstab")
	link := filepath.Join(dir, "fstab")
	os.WriteFile(target, []byte("# real\n"), 0o600)
	if err := os.Symlink("real/fstab", link); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(link, Entry{Spec: "UUID=x", File: "/x", VFSType: "xfs"}, day); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced by a file: %v %v", fi, err)
	}
	got, _ := os.ReadFile(target)
	if !strings.Contains(string(got), "UUID=x\t/x") {
		t.Fatalf("target not updated: %q", got)
	}
	if bak, err := os.ReadFile(target + BackupSuffix); err != nil || string(bak) != "# real\n" {
		t.Fatalf("backup beside target: %q %v", bak, err)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600 kept", fi.Mode())
	}
}

func TestRemoveMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fstab")
	removed, err := Remove(path, func(Entry) bool { return true })
	if err != nil || len(removed) != 0 {
		t.Fatalf("removed %v err %v", removed, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("Remove created a file")
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.fstab")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, err := Parse(data)
		if err != nil {
			return
		}
		if got := Render(lines); !bytes.Equal(got, data) {
			t.Fatalf("round trip: got %q want %q", got, data)
		}
		for _, l := range lines {
			if l.Managed && (l.Entry == nil) {
				t.Fatal("managed line without entry")
			}
			if l.Entry == nil {
				continue
			}
			// A decoded entry rendered by EntryLine must parse back to
			// the same spec and mount point.
			back, err := Parse([]byte(EntryLine(*l.Entry)))
			if err != nil || len(back) != 1 || back[0].Entry == nil {
				t.Fatalf("EntryLine(%+v) does not parse back: %v", *l.Entry, err)
			}
			if back[0].Entry.Spec != l.Entry.Spec || back[0].Entry.File != l.Entry.File {
				t.Fatalf("EntryLine(%+v) parses back as %+v", *l.Entry, *back[0].Entry)
			}
		}
	})
}

// Rewriting keeps the owner of fstab and of its backup (chown needs root).
func TestOwnerPreserved(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "privileged test: needs root to chown")
	}
	path := filepath.Join(t.TempDir(), "fstab")
	if err := os.WriteFile(path, []byte("# owned\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 4321, 4322); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(path, Entry{Spec: "UUID=x", File: "/x", VFSType: "xfs"}, day); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + BackupSuffix} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 4321 || st.Gid != 4322 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: owner %d:%d mode %v, want 4321:4322 0600", p, st.Uid, st.Gid, fi.Mode().Perm())
		}
	}
}

func TestReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fstab")
	orig := "/dev/sda1 /home xfs defaults 0 0\n" +
		"# diskprep: UUID=old added 2026-01-01\n" +
		"UUID=old\t/data\txfs\tdefaults,nofail\t0\t0\n" +
		"UUID=keep /srv ext4 defaults 0 2\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	onData := func(e Entry) bool { return e.File == "/data" || e.File == "/home" }
	e := Entry{Spec: "UUID=new", File: "/data", VFSType: "xfs"}
	removed, changed, err := Replace(path, onData, e, day)
	if err != nil || !changed || len(removed) != 1 || removed[0].Spec != "UUID=old" {
		t.Fatalf("removed %+v changed %v err %v", removed, changed, err)
	}
	want := "/dev/sda1 /home xfs defaults 0 0\n" +
		"UUID=keep /srv ext4 defaults 0 2\n" +
		"# diskprep: UUID=new added 2026-11-30 (\"diskprep release\" removes this entry)\n" +
		"UUID=new\t/data\txfs\tdefaults,nofail\t0\t0\n"
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if bak, _ := os.ReadFile(path + BackupSuffix); string(bak) != orig {
		t.Fatalf("backup %q, want the original (one write)", bak)
	}
	// Again: the managed entry is the one asked for, nothing changes.
	removed, changed, err = Replace(path, onData, e, day)
	if err != nil || changed || len(removed) != 0 {
		t.Fatalf("rerun: removed %+v changed %v err %v", removed, changed, err)
	}
	// An unmanaged line on the mount point is never replaced.
	removed, changed, err = Replace(path, onData, Entry{Spec: "UUID=other", File: "/srv", VFSType: "ext4"}, day)
	if !errors.Is(err, ErrConflict) || changed || removed != nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("unmanaged conflict: removed %+v changed %v err %v", removed, changed, err)
	}
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Fatalf("refused Replace changed the file:\n%s", got)
	}
}

// Lines mount(8) would skip as malformed still reserve their mount point.
func TestMalformedLineStillConflicts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fstab")
	orig := "UUID=y /b xfs defaults # old disk\n/dev/sdz1 /c\n"
	os.WriteFile(path, []byte(orig), 0o644)
	for _, mp := range []string{"/b", "/c"} {
		if _, err := Add(path, Entry{Spec: "UUID=new", File: mp, VFSType: "xfs"}, day); !errors.Is(err, ErrConflict) {
			t.Errorf("Add %s: %v, want ErrConflict", mp, err)
		}
	}
}
