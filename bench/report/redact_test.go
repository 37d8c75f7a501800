package report

import (
	"bytes"
	"io"
	"strings"
	"testing"

	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/fio"
	"github.com/diskprep/diskprep/bench/prom"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/internal/redact"
)

// Every renderer of a single record, given the redacted copy, shows none
// of the identifying values it shows given the original.
func TestRecordRenderers(t *testing.T) {
	rec := ct.Identifying(ct.ID(1), "storage-lab", "Z3GKXXXXGS", t0)
	secrets := []string{"storage-lab", "Z3GKXXXXGS", "5000039fe6d0a1b2", "1a2b3c4d-0000-4111-8222-333344445555",
		"9e8d7c6b-5a49-4838-a727-16051f4e3d2c", "realbox-77", "52:54:00:ab:cd:ef"}
	renderers := map[string]func(io.Writer, *record.Record) error{
		"fio export": fio.Export,
		"prom":       func(w io.Writer, r *record.Record) error { return prom.Write(w, r) },
	}
	// The record as bench prints it and results show shows it.
	for _, f := range RecordFormats {
		renderers["report "+f] = func(w io.Writer, r *record.Record) error { return Record(w, f, r) }
	}
	for name, render := range renderers {
		var plain, red bytes.Buffer
		if err := render(&plain, rec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := render(&red, redact.Copy(rec)); err != nil {
			t.Fatalf("%s redacted: %v", name, err)
		}
		var shown []string
		for _, s := range secrets {
			if strings.Contains(strings.ToLower(plain.String()), strings.ToLower(s)) {
				shown = append(shown, s)
			}
			if strings.Contains(strings.ToLower(red.String()), strings.ToLower(s)) {
				t.Errorf("%s of the redacted record shows %q", name, s)
			}
		}
		if len(shown) == 0 && plain.String() != red.String() {
			t.Errorf("%s shows nothing identifying, yet redaction changed it", name)
		}
		t.Logf("%s: hides %d values", name, len(shown))
	}
}
