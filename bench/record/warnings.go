package record

import (
	"encoding/json"
	"io"
	"strings"
)

// WriteJSON writes the record as indented JSON, exactly as the store keeps it.
func WriteJSON(w io.Writer, rec *Record) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rec)
}

// allWarnings lists the record's warnings and its workloads', once each.
// The same warning about several workloads ("seq1m-read: runtime 1s is
// under 3s", "seq1m-write: runtime 1s ...") becomes one line naming them all.
func allWarnings(rec *Record) []string {
	out := AddWarnings(nil, rec.Warnings...)
	var order []string
	names := map[string][]string{}
	for _, wr := range rec.Workloads {
		var ws []string
		ws = AddWarnings(ws, wr.Warnings...)
		for _, r := range wr.Runs {
			ws = AddWarnings(ws, r.Warnings...)
		}
		for _, w := range ws {
			msg, ok := strings.CutPrefix(w, wr.Params.Name+": ")
			if !ok {
				out = AddWarnings(out, w)
				continue
			}
			if _, seen := names[msg]; !seen {
				order = append(order, msg)
			}
			names[msg] = AddWarnings(names[msg], wr.Params.Name)
		}
	}
	for _, msg := range order {
		out = append(out, strings.Join(names[msg], ", ")+": "+msg)
	}
	return out
}

// Warnings lists every warning of a record once (for printing on stderr).
func Warnings(rec *Record) []string { return allWarnings(rec) }

// AddWarnings appends the items not already in list, in order: a warning
// is said once however many repetitions give it.
func AddWarnings(list []string, items ...string) []string {
	for _, it := range items {
		dup := false
		for _, l := range list {
			if l == it {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, it)
		}
	}
	return list
}
