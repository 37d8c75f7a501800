package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/internal/atomicfile"
)

// ErrNotFound is returned by Load and Remove when no record matches an id.
var ErrNotFound = errors.New("no such result")

// ErrAmbiguous is returned when an id prefix matches several records.
var ErrAmbiguous = errors.New("ambiguous result id")

// Save writes rec into the store dir as <id>.json, atomically (temp file,
// fsync, link), creating dir if needed. It never replaces an existing record.
func Save(dir string, rec *Record) error {
	if rec.ID == "" || strings.ContainsAny(rec.ID, `/\`) || strings.HasPrefix(rec.ID, ".") {
		return fmt.Errorf("save result: bad id %q", rec.ID)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save result: %w", err)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("save result %s: %w", rec.ID, err)
	}
	b = append(b, '\n')
	if err := atomicfile.WriteNew(filepath.Join(dir, rec.ID+".json"), b, 0o644); err != nil {
		return fmt.Errorf("save result: %w", err)
	}
	return nil
}

// Entry is one readable record of the store and the file it came from.
type Entry struct {
	Path   string
	Record *Record
}

// List reads every record in dir, oldest first (ids sort by time). Files it
// cannot use (unreadable, corrupt, another schema) are skipped and named in
// the warnings; a missing dir is an empty store.
func List(dir string) ([]Entry, []string, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list results: %w", err)
	}
	var out []Entry
	var warnings []string
	for _, de := range des {
		name := de.Name()
		if de.IsDir() || atomicfile.IsTemp(name) || !strings.HasSuffix(name, ".json") {
			continue
		}
		path := filepath.Join(dir, name)
		rec, err := ReadFile(path)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("skipped %s: %v", path, err))
			continue
		}
		out = append(out, Entry{Path: path, Record: rec})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Record.ID < out[j].Record.ID })
	return out, warnings, nil
}

// ReadFile reads one record file, refusing documents of another schema.
func ReadFile(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("not a result record: %w", err)
	}
	if probe.Schema != Schema {
		return nil, fmt.Errorf("schema %q, want %q", probe.Schema, Schema)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("corrupt result record: %w", err)
	}
	if rec.ID == "" {
		return nil, errors.New("result record without id")
	}
	return &rec, nil
}

// Load returns the record whose id is id or starts with it (a unique prefix
// is enough, as with git commits).
func Load(dir, id string) (*Entry, error) {
	entries, _, err := List(dir)
	if err != nil {
		return nil, err
	}
	e, err := match(entries, id)
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
func Remove(dir, id string) (string, error) {
	e, err := Load(dir, id)
	if err != nil {
		return "", err
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
