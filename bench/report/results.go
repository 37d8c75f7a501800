package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
)

// ResultRow is one line of `results list` (its json output lists them under "results").
type ResultRow struct {
	ID        string    `json:"id"`
	Start     time.Time `json:"start"`
	Label     string    `json:"label"`
	Host      string    `json:"host"`
	Target    string    `json:"target"`
	FS        string    `json:"fs"`
	Set       string    `json:"set"`
	Repeat    int       `json:"repeat"`
	Workloads int       `json:"workloads"`
	Partial   bool      `json:"partial,omitempty"`
	Path      string    `json:"path"`
}

func rowOf(en record.Entry) ResultRow {
	r := en.Record
	target := r.Target.Path
	if r.Target.Disk != "" && r.Target.Path != "/dev/"+r.Target.Disk {
		target += " (" + r.Target.Disk + ")"
	}
	return ResultRow{
		ID: r.ID, Start: r.Start, Label: r.Label, Host: r.Host.Hostname, Target: target,
		FS: compare.GroupKey(r, compare.ByFS), Set: r.Set, Repeat: r.Repeat, Workloads: len(r.Workloads),
		Partial: r.Partial, Path: en.Path,
	}
}

// ResultsList is what `results list` shows: the records picked, and for an
// empty list how many the store holds and where it is.
type ResultsList struct {
	Entries []record.Entry
	Total   int // records in the store, picked or not
	Dir     string
}

// ResultListSchema names the JSON shape of `results list -o json`.
const ResultListSchema = "diskprep/result-list/v1"

// ResultListJSON is `results list -o json`: the rows picked, with where
// they come from and how many records the store holds.
type ResultListJSON struct {
	Schema  string      `json:"schema"`
	Dir     string      `json:"dir"`
	Total   int         `json:"total"`
	Results []ResultRow `json:"results"`
}

// ResultsFormats are the outputs of Results.
var ResultsFormats = []string{"table", "json", "markdown", "csv"}

// Results renders the results list: one line per record (id, time,
// label, host, target, fs, set); json and csv add the file and counts.
func Results(w io.Writer, format string, l ResultsList) error {
	rows := []ResultRow{}
	for _, en := range l.Entries {
		rows = append(rows, rowOf(en))
	}
	when := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") }
	cells := func(r ResultRow) []string {
		set := r.Set
		if r.Repeat > 1 {
			set += fmt.Sprintf(" ×%d", r.Repeat)
		}
		if r.Partial {
			set += " (partial)"
		}
		return []string{r.ID, when(r.Start), r.Label, r.Host, r.Target, r.FS, set}
	}
	header := []string{"ID", "TIME (UTC)", "LABEL", "HOST", "TARGET", "FS", "SET"}
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ResultListJSON{ResultListSchema, l.Dir, l.Total, rows})
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write([]string{"id", "start", "label", "host", "target", "fs", "set", "repeat", "workloads", "partial", "path"})
		for _, r := range rows {
			cw.Write([]string{r.ID, r.Start.UTC().Format(time.RFC3339), r.Label, r.Host, r.Target, r.FS, r.Set,
				fmt.Sprint(r.Repeat), fmt.Sprint(r.Workloads), fmt.Sprint(r.Partial), r.Path})
		}
		cw.Flush()
		return cw.Error()
	case "markdown":
		var b strings.Builder
		fmt.Fprintf(&b, "| %s |\n|%s|\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
		for _, r := range rows {
			c := cells(r)
			for i := range c {
				c[i] = mdCell(c[i])
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(c, " | "))
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	if len(rows) == 0 {
		if l.Total == 0 {
			fmt.Fprintf(w, "no results in %s\n", l.Dir)
		} else {
			fmt.Fprintf(w, "no results match (of %d in %s)\n", l.Total, l.Dir)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		c := cells(r)
		for i := range c {
			c[i] = dash(c[i])
		}
		fmt.Fprintln(tw, strings.Join(c, "\t"))
	}
	return tw.Flush()
}
