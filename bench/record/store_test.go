package record

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/internal/atomicfile"
)

// recWithID is bench's golden record (a fileserver run on bench-host,
// written by bench's TestRecordGolden) under another id.
func recWithID(id string) *Record {
	r, err := ReadFile(filepath.Join("..", "testdata", "record.golden.json"))
	if err != nil {
		panic(err)
	}
	r.ID = id
	return r
}

func TestStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results", "nested") // Save creates it
	ids := []string{"20261130T061500Z-aaaa", "20261130T061500Z-aabb", "20261129T000000Z-cccc"}
	for _, id := range ids {
		if err := Save(dir, recWithID(id)); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("store dir mode %v, %v", fi.Mode(), err)
	}
	// A record is never replaced.
	if err := Save(dir, recWithID(ids[0])); !errors.Is(err, os.ErrExist) {
		t.Errorf("second Save of one id: %v", err)
	}
	if err := Save(dir, recWithID("../escape")); err == nil {
		t.Error("Save accepted an id with a slash")
	}

	// What a killed writer, a stranger, a corrupt record and another schema
	// leave behind: listed as warnings or ignored, never fatal.
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(atomicfile.TempPrefix+"20261130T061500Z-dddd.json-123", `{"schema":"diskprep/result/v1","id":"20261130T061500Z-dddd"}`)
	write("corrupt.json", `{"schema":"diskprep/result/v1", "id": `)
	write("inventory.json", `{"schema":"diskprep/inventory/v1","hostname":"x"}`)
	write("future.json", `{"schema":"diskprep/result/v2","id":"20300101T000000Z-ffff"}`)
	write("notes.txt", "not a record")
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o755); err != nil {
		t.Fatal(err)
	}

	entries, warnings, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Record.ID)
		if filepath.Base(e.Path) != e.Record.ID+".json" {
			t.Errorf("entry %s from %s", e.Record.ID, e.Path)
		}
	}
	if strings.Join(got, " ") != "20261129T000000Z-cccc 20261130T061500Z-aaaa 20261130T061500Z-aabb" {
		t.Errorf("List ids %v (want oldest first, temp file skipped)", got)
	}
	if len(warnings) != 3 {
		t.Errorf("warnings %q, want 3 (corrupt, inventory, future)", warnings)
	}
	for _, name := range []string{"corrupt.json", "inventory.json", "future.json"} {
		if !strings.Contains(strings.Join(warnings, "\n"), name) {
			t.Errorf("no warning names %s: %q", name, warnings)
		}
	}
	// The full record survives the trip.
	if entries[1].Record.Workloads[1].Summary["read"].Name != "randread" || entries[1].Record.Host.Hostname != "bench-host" {
		t.Error("record content lost in the store")
	}

	e, err := Load(dir, "20261129")
	if err != nil || e.Record.ID != ids[2] {
		t.Errorf("Load by unique prefix: %v %v", e, err)
	}
	if e, err := Load(dir, ids[0]); err != nil || e.Record.ID != ids[0] {
		t.Errorf("Load by full id: %v", err)
	}
	if _, err := Load(dir, "20261130T061500Z-aa"); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := Load(dir, "2019"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing id: %v", err)
	}
	if id, err := Remove(dir, "20261130T061500Z-aab"); err != nil || id != ids[1] {
		t.Errorf("Remove: %s %v", id, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ids[1]+".json")); !os.IsNotExist(err) {
		t.Error("removed record still there")
	}
	if _, err := Remove(dir, ids[1]); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove twice: %v", err)
	}

	// A store that does not exist yet is empty, not an error.
	entries, warnings, err = List(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(entries) != 0 || len(warnings) != 0 {
		t.Errorf("missing store: %v %v %v", entries, warnings, err)
	}
}

func TestSaveLeavesNoTempFiles(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, recWithID("20261130T061500Z-0001")); err != nil {
		t.Fatal(err)
	}
	des, _ := os.ReadDir(dir)
	if len(des) != 1 || des[0].Name() != "20261130T061500Z-0001.json" {
		var names []string
		for _, d := range des {
			names = append(names, d.Name())
		}
		t.Errorf("store holds %v", names)
	}
}

// Gather takes ids (or prefixes) in the store, record files and
// directories of records, counts a record reached twice once (saying so),
// skips what is not a record, and names a source that is none of these.
func TestGather(t *testing.T) {
	store, other := t.TempDir(), t.TempDir()
	for _, id := range []string{"20261130T061500Z-aaaa", "20261130T061600Z-bbbb"} {
		if err := Save(store, recWithID(id)); err != nil {
			t.Fatal(err)
		}
	}
	// other holds a record of its own and a copy of one in the store.
	for _, id := range []string{"20261201T000000Z-cccc", "20261130T061600Z-bbbb"} {
		if err := Save(other, recWithID(id)); err != nil {
			t.Fatal(err)
		}
	}
	junk := filepath.Join(other, "junk.json")
	if err := os.WriteFile(junk, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	ids := func(recs []*Record) string {
		var s []string
		for _, r := range recs {
			s = append(s, r.ID)
		}
		return strings.Join(s, " ")
	}

	all, warnings, err := Gather(nil, store)
	if err != nil || ids(all) != "20261130T061500Z-aaaa 20261130T061600Z-bbbb" || len(warnings) != 0 {
		t.Errorf("whole store: %q %q %v", ids(all), warnings, err)
	}
	got, warnings, err := Gather([]string{"20261130T0616", other, filepath.Join(store, "20261130T061600Z-bbbb.json"), junk}, store)
	if err != nil {
		t.Fatal(err)
	}
	// The same file by id and by path is one source; the copy in other
	// is the same record from elsewhere.
	if ids(got) != "20261130T061600Z-bbbb 20261201T000000Z-cccc" {
		t.Errorf("records %q", ids(got))
	}
	w := strings.Join(warnings, "\n")
	if strings.Count(w, "given twice") != 1 || !strings.Contains(w, "record 20261130T061600Z-bbbb given twice ("+filepath.Join(store, "20261130T061600Z-bbbb.json")+" and "+filepath.Join(other, "20261130T061600Z-bbbb.json")+")") ||
		strings.Count(w, "skipped "+junk) != 2 {
		t.Errorf("warnings %q", warnings)
	}
	if _, _, err := Gather([]string{"nosuch"}, store); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nosuch is neither a file, a directory nor a result id in "+store) {
		t.Errorf("unknown source: %v", err)
	}
}

// listWithin runs List with a deadline, so a store file that blocks an
// open (a named pipe) fails the test instead of hanging it.
func listWithin(t *testing.T, dir string) ([]Entry, []string) {
	t.Helper()
	type result struct {
		entries  []Entry
		warnings []string
		err      error
	}
	done := make(chan result, 1)
	go func() {
		e, w, err := List(dir)
		done <- result{e, w, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.entries, r.warnings
	case <-time.After(10 * time.Second):
		t.Fatalf("List(%s) still running after 10s", dir)
		return nil, nil
	}
}

// Files of the store are untrusted input: a named pipe is not opened for
// long, a link (to /dev/zero, to a good record) is not followed, a file
// over MaxRecordBytes is not read. Each is skipped with one warning naming
// it and why; the good record is still listed.
func TestListUntrustedFiles(t *testing.T) {
	dir := t.TempDir()
	good := "20261130T061500Z-aaaa"
	if err := Save(dir, recWithID(good)); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(good+".json", link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"schema":"diskprep/result/v1","id":"20261130T061500Z-bbbb"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 200e6); err != nil { // sparse: no disk used
		t.Fatal(err)
	}

	entries, warnings := listWithin(t, dir)
	if len(entries) != 1 || entries[0].Record.ID != good {
		t.Errorf("entries %v, want only %s", entries, good)
	}
	want := []string{
		"skipped " + big + ": 200 MB is over the 64 MiB limit of a record",
		"skipped " + fifo + ": not a regular file (a named pipe)",
		"skipped " + link + ": is a symbolic link, not followed in a results store",
		"skipped " + zero + ": is a symbolic link, not followed in a results store",
	}
	if strings.Join(warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
}

// readLimited checks what it opened, not only the directory entry: a
// named pipe or a link reaching it past List's look, or a file over the
// limit, is refused without blocking or reading it whole.
func TestReadRecordUntrusted(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxRecordBytes+1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		follow bool
		want   string
	}{
		{fifo, false, "not a regular file (a named pipe)"},
		{link, false, "is a symbolic link, not followed in a results store"},
		{link, true, "not a regular file (a named pipe)"}, // ReadFile: the user named it
		{"/dev/zero", true, "not a regular file (a character device)"},
		{big, false, "67.1 MB is over the 64 MiB limit of a record"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := readRecord(c.path, c.follow)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || err.Error() != c.want {
				t.Errorf("readRecord(%s, follow %v): %v, want %q", c.path, c.follow, err, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("readRecord(%s) still running after 10s", c.path)
		}
	}
}

// A record the store could not read back is not saved, and says why.
// (Save runs fitsStore on the encoded record; encoding 64 MiB here would
// take seconds.)
func TestFitsStore(t *testing.T) {
	if err := fitsStore(MaxRecordBytes); err != nil {
		t.Errorf("a record of exactly the limit: %v", err)
	}
	if err := fitsStore(MaxRecordBytes + 1); err == nil || err.Error() != "67.1 MB is over the 64 MiB limit of a record (a record this big is not kept)" {
		t.Errorf("a record over the limit: %v", err)
	}
}

// A store that cannot be written: the error wraps ErrNotSaved and names
// the store and the cause.
func TestSaveFailureNamesStore(t *testing.T) {
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "results")
	err := Save(dir, recWithID("20261130T061500Z-aaaa"))
	if !errors.Is(err, ErrNotSaved) || !errors.Is(err, syscall.ENOTDIR) || !strings.HasPrefix(err.Error(), "result not saved in "+dir+": ") {
		t.Errorf("Save under a regular file: %v", err)
	}
}

// Load of an id whose file is there but unreadable names the file and
// why, not "no such result".
func TestLoadNamesDamagedRecord(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, recWithID("20261130T061500Z-aaaa")); err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(dir, "20261130T061600Z-bbbb.json")
	if err := os.WriteFile(damaged, []byte(`{"schema":"diskprep/result/v1","id":`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"20261130T061600Z-bbbb", "20261130T0616"} {
		_, err := Load(dir, id)
		if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "cannot read "+damaged+": not a result record: unexpected end of JSON input") {
			t.Errorf("Load(%s): %v", id, err)
		}
	}
	if _, err := Load(dir, "20261130T0617"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of a missing id: %v", err)
	}
}

// Gather's file arguments are user-named (a link is followed) but still
// untrusted: a named pipe or a device is skipped at once with a warning.
func TestGatherUntrustedArguments(t *testing.T) {
	store, dir := t.TempDir(), t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Save(dir, recWithID("20261130T061500Z-aaaa")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "mine.json")
	if err := os.Symlink(filepath.Join(dir, "20261130T061500Z-aaaa.json"), link); err != nil {
		t.Fatal(err)
	}
	type result struct {
		recs     []*Record
		warnings []string
		err      error
	}
	done := make(chan result, 1)
	go func() {
		r, w, err := Gather([]string{fifo, "/dev/zero", link}, store)
		done <- result{r, w, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || len(r.recs) != 1 || r.recs[0].ID != "20261130T061500Z-aaaa" {
			t.Errorf("Gather: %v %v", r.recs, r.err)
		}
		want := "skipped " + fifo + ": not a regular file (a named pipe)\nskipped /dev/zero: not a regular file (a character device)"
		if strings.Join(r.warnings, "\n") != want {
			t.Errorf("warnings %q, want %q", r.warnings, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Gather still running after 10s")
	}
}
