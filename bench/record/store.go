package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/internal/atomicfile"
	"github.com/diskprep/diskprep/internal/units"
)

// ErrNotFound is returned by Load and Remove when no record matches an id.
var ErrNotFound = errors.New("no such result")

// ErrAmbiguous is returned when an id prefix matches several records.
var ErrAmbiguous = errors.New("ambiguous result id")

// ErrNotSaved is wrapped by every error of Save: the record was made but
// is not in the store, so the caller still holds the run's only copy.
var ErrNotSaved = errors.New("result not saved")

// MaxRecordBytes bounds what the store reads of one record file, and so
// the memory a damaged or hostile file can take. A record keeps per-second
// host, device and engine samples, some 2 KB per second measured: a long
// --steady-state run reaches tens of MB, and 64 MiB holds about eight
// hours of measurement. Save refuses a bigger record rather than store one
// it could not read back.
const MaxRecordBytes = 64 << 20

// Save writes rec into the store dir as <id>.json, atomically (temp file,
// fsync, link), creating dir (0755) if needed. It never replaces an
// existing record. As root it refuses a dir another user could change
// (CheckStore). Every error wraps ErrNotSaved and names the store.
func Save(dir string, rec *Record) error {
	// Cleaned as CheckStore's walk and the record's path are, so a ".."
	// after a link means the same to all of them.
	dir = filepath.Clean(dir)
	notSaved := func(err error) error { return fmt.Errorf("%w in %s: %w", ErrNotSaved, dir, err) }
	if rec.ID == "" || strings.ContainsAny(rec.ID, `/\`) || strings.HasPrefix(rec.ID, ".") {
		return notSaved(fmt.Errorf("bad id %q", rec.ID))
	}
	// Checked before MkdirAll, so nothing is made under another user's
	// directory, and after it, as a directory another user made in the
	// meantime (in a sticky /tmp) would pass the first check unseen.
	if err := checkStoreOwners(dir); err != nil {
		return notSaved(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return notSaved(err)
	}
	if err := checkStoreOwners(dir); err != nil {
		return notSaved(err)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return notSaved(fmt.Errorf("record %s: %w", rec.ID, err))
	}
	b = append(b, '\n')
	if err := fitsStore(len(b)); err != nil {
		return notSaved(fmt.Errorf("record %s: %w", rec.ID, err))
	}
	if err := atomicfile.WriteNew(filepath.Join(dir, rec.ID+".json"), b, 0o644); err != nil {
		return notSaved(err)
	}
	return nil
}

// Entry is one readable record of the store and the file it came from.
type Entry struct {
	Path   string
	Record *Record
}

// List reads every record in dir, oldest first (ids sort by time). Files it
// cannot use (unreadable, corrupt, another schema, not a regular file, a
// symbolic link, too big) are skipped and named in the warnings; a missing
// dir is an empty store.
func List(dir string) ([]Entry, []string, error) {
	entries, skips, err := list(dir)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	for _, sk := range skips {
		warnings = append(warnings, sk.String())
	}
	return entries, warnings, nil
}

// skipped is a file of the store that holds no readable record, and why.
type skipped struct {
	path string
	err  error
}

func (s skipped) String() string { return fmt.Sprintf("skipped %s: %v", s.path, s.err) }

func list(dir string) ([]Entry, []skipped, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list results: %w", err)
	}
	var files []storeFile
	for _, de := range des {
		name := de.Name()
		if de.IsDir() || atomicfile.IsTemp(name) || !strings.HasSuffix(name, ".json") {
			continue
		}
		f := storeFile{path: filepath.Join(dir, name)}
		// The entry's type spares opening a device or a pipe at all;
		// readRecord checks again on what it opened.
		if t := de.Type(); !t.IsRegular() {
			f.err = notRegular(t)
		}
		files = append(files, f)
	}
	readAll(files)
	var out []Entry
	var skips []skipped
	for _, f := range files {
		if f.err != nil {
			skips = append(skips, skipped{f.path, f.err})
			continue
		}
		out = append(out, Entry{Path: f.path, Record: f.rec})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Record.ID < out[j].Record.ID })
	return out, skips, nil
}

// storeFile is one file of a store: its record or why it holds none.
type storeFile struct {
	path string
	rec  *Record
	err  error
}

// maxReaders bounds the files read at once: decoding is CPU-bound, so
// more than the CPUs gains nothing, and each reader may hold a file of
// up to MaxRecordBytes.
const maxReaders = 8

// readAll reads the records of files that have no error yet, on as many
// goroutines as there are CPUs (at most maxReaders). Decoding JSON is
// what a listing of thousands of records spends its time on; each file
// is read and judged exactly as on its own, so the outcome does not
// depend on the order or the number of readers.
func readAll(files []storeFile) {
	workers := min(runtime.GOMAXPROCS(0), maxReaders, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var buf bytes.Buffer
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					return
				}
				if f := &files[i]; f.err == nil {
					f.rec, f.err = readRecordBuf(f.path, false, &buf)
				}
			}
		})
	}
	wg.Wait()
}

// ReadFile reads one record file named by the user, refusing documents of
// another schema. A symbolic link is followed (the user named it), but
// what it reaches must be a regular file within MaxRecordBytes.
func ReadFile(path string) (*Record, error) {
	return readRecord(path, true)
}

// readRecord reads the record at path as untrusted input: never blocking
// (a named pipe, a device), regular files only, at most MaxRecordBytes
// even when the file grows while it is read, and, unless follow, no
// symbolic link.
func readRecord(path string, follow bool) (*Record, error) {
	return readRecordBuf(path, follow, new(bytes.Buffer))
}

// readRecordBuf is readRecord reading the file into buf, which a reader
// of many files reuses (the record keeps none of it).
func readRecordBuf(path string, follow bool, buf *bytes.Buffer) (*Record, error) {
	b, err := readLimited(path, follow, buf)
	if err != nil {
		return nil, err
	}
	return decodeRecord(b)
}

// decodeRecord decodes a record file's bytes, refusing another schema.
// A readable record is decoded once: whenever the whole document decodes,
// the schema alone would have too, to the same value. Only a document
// that does not decode takes the two steps, so that what it is told
// (not a record, another schema, corrupt) is the same as before.
func decodeRecord(b []byte) (*Record, error) {
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		var probe struct {
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, fmt.Errorf("not a result record: %w", err)
		}
		if probe.Schema != Schema {
			return nil, fmt.Errorf("schema %q, want %q", probe.Schema, Schema)
		}
		return nil, fmt.Errorf("corrupt result record: %w", err)
	}
	if rec.Schema != Schema {
		return nil, fmt.Errorf("schema %q, want %q", rec.Schema, Schema)
	}
	if rec.ID == "" {
		return nil, errors.New("result record without id")
	}
	return &rec, nil
}

func readLimited(path string, follow bool, buf *bytes.Buffer) ([]byte, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK // os.OpenFile adds O_CLOEXEC
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if errors.Is(err, syscall.ELOOP) && !follow {
		return nil, errors.New("is a symbolic link, not followed in a results store")
	}
	if err != nil {
		return nil, errorWithoutPath(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, errorWithoutPath(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(fi.Mode())
	}
	if fi.Size() > MaxRecordBytes {
		return nil, tooBig(fi.Size())
	}
	buf.Reset()
	buf.Grow(int(fi.Size()) + 1)
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxRecordBytes+1)); err != nil {
		return nil, errorWithoutPath(err)
	}
	if buf.Len() > MaxRecordBytes {
		return nil, fmt.Errorf("grew while read: %w", tooBig(int64(buf.Len())))
	}
	return buf.Bytes(), nil
}

// errorWithoutPath drops the path of an *fs.PathError: the warnings and
// errors that carry it name the file already.
func errorWithoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// fitsStore refuses a record of size bytes that the store would not read
// back.
func fitsStore(size int) error {
	if size > MaxRecordBytes {
		return fmt.Errorf("%w (a record this big is not kept)", tooBig(int64(size)))
	}
	return nil
}

func tooBig(size int64) error {
	return fmt.Errorf("%s is over the %s limit of a record", units.FormatDecimalSize(uint64(size)), units.FormatSize(MaxRecordBytes))
}

// notRegular says what a file that is not a regular one is.
func notRegular(m fs.FileMode) error {
	kind := "an irregular file"
	switch {
	case m&fs.ModeSymlink != 0:
		return errors.New("is a symbolic link, not followed in a results store")
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a block device"
	}
	return fmt.Errorf("not a regular file (%s)", kind)
}

// Load returns the record whose id is id or starts with it (a unique prefix
// is enough, as with git commits). When no readable record matches but a
// file named so does, the error names that file and why it was skipped.
func Load(dir, id string) (*Entry, error) {
	entries, skips, err := list(dir)
	if err != nil {
		return nil, err
	}
	e, err := match(entries, id)
	if errors.Is(err, ErrNotFound) {
		for _, sk := range skips {
			if strings.HasPrefix(strings.TrimSuffix(filepath.Base(sk.path), ".json"), id) {
				return nil, fmt.Errorf("result %q: cannot read %s: %w", id, sk.path, sk.err)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

func match(entries []Entry, id string) (*Entry, error) {
	if id == "" {
		return nil, workload.Usagef("result id is empty")
	}
	var found []*Entry
	for i := range entries {
		rid := entries[i].Record.ID
		if rid == id {
			return &entries[i], nil
		}
		if strings.HasPrefix(rid, id) {
			found = append(found, &entries[i])
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("result %q: %w", id, ErrNotFound)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, e := range found {
		ids[i] = e.Record.ID
	}
	return nil, fmt.Errorf("result %q matches %s: %w", id, strings.Join(ids, ", "), ErrAmbiguous)
}

// Remove deletes the record matching id (unique prefix) and returns its id.
// As root it refuses a store another user could change (CheckStore).
func Remove(dir, id string) (string, error) {
	e, err := Load(dir, id)
	if err != nil {
		return "", err
	}
	if err := checkStoreOwners(dir); err != nil {
		return "", fmt.Errorf("remove result %s: %w", e.Record.ID, err)
	}
	if err := os.Remove(e.Path); err != nil {
		return "", fmt.Errorf("remove result %s: %w", e.Record.ID, err)
	}
	return e.Record.ID, nil
}

// Gather reads the records named by sources (ids in the store, record
// files, directories of records copied from other machines), or the whole
// store when there are none: what `diskprep compare` compares. Unreadable
// files and other schemas are skipped with a warning; a record reached
// twice counts once. A source that is neither a path nor an id in the
// store is an error wrapping ErrNotFound.
func Gather(sources []string, store string) ([]*Record, []string, error) {
	var recs []*Record
	var warnings []string
	seen := map[string]string{}
	add := func(r *Record, from string) {
		if prev, ok := seen[r.ID]; ok {
			if prev != from {
				warnings = append(warnings, fmt.Sprintf("record %s given twice (%s and %s): counted once", r.ID, prev, from))
			}
			return
		}
		seen[r.ID] = from
		recs = append(recs, r)
	}
	addDir := func(dir string) error {
		entries, ws, err := List(dir)
		if err != nil {
			return err
		}
		warnings = append(warnings, ws...)
		for _, en := range entries {
			add(en.Record, en.Path)
		}
		return nil
	}
	if len(sources) == 0 {
		return recs, warnings, addDir(store)
	}
	for _, src := range sources {
		fi, statErr := os.Stat(src)
		switch {
		case statErr == nil && fi.IsDir():
			if err := addDir(src); err != nil {
				return nil, nil, err
			}
		case statErr == nil && !fi.Mode().IsRegular():
			// Not opened at all: a named pipe would block, a device
			// never end.
			warnings = append(warnings, skipped{src, notRegular(fi.Mode())}.String())
		case statErr == nil:
			r, err := ReadFile(src)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("skipped %s: %v", src, err))
				continue
			}
			add(r, src)
		default:
			// Not a path: an id (or unique prefix) in the store.
			en, err := Load(store, src)
			if err != nil {
				if errors.Is(err, ErrNotFound) {
					return nil, nil, fmt.Errorf("%s is neither a file, a directory nor a result id in %s: %w", src, store, err)
				}
				return nil, nil, err
			}
			add(en.Record, en.Path)
		}
	}
	return recs, warnings, nil
}
