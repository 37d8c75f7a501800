package fio

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/diskprep/diskprep/bench/workload"
)

// People name fio jobs "file1", "test" or "job1" and keep them for every
// command (the seed write-up ran rw=read, rw=write and rw=randrw all as
// -name=file1): a job name is a label, not what the job did. An imported
// workload is named from its rw (seqread, seqwrite, randread, randwrite;
// randrw shows as randread and randwrite), with the job name's informative
// words after it: a job "oltp-randread" of rw=randread is "randread-oltp";
// words that only restate rw, and placeholders, are dropped.

// genericWords say nothing a workload's rw does not: placeholders and
// the words of rw itself.
var genericWords = map[string]bool{
	"file": true, "job": true, "test": true, "fio": true, "bench": true, "benchmark": true,
	"run": true, "disk": true, "io": true, "t": true, "j": true, "f": true, "x": true,
	"seq": true, "sequential": true, "rand": true, "random": true, "rnd": true,
	"read": true, "reads": true, "write": true, "writes": true, "rw": true, "mixed": true,
	"readwrite": true, "randrw": true, "seqread": true, "seqwrite": true, "seqrw": true,
	"randread": true, "randwrite": true, "rr": true, "rwmix": true,
}

// informativeWords are the words of a job name that say something beyond
// rw, in order ("file1" and "seq-read" give none; "vmdk-seqread" gives
// "vmdk").
func informativeWords(name string) []string {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var out []string
	for _, w := range words {
		stem := strings.TrimRightFunc(w, unicode.IsDigit)
		if stem == "" || genericWords[stem] || genericWords[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}

// rwNames is what a workload of rw is called, and its directions when
// it mixes reads and writes.
func rwNames(rw string) (name, read, write string) {
	switch rw {
	case "read":
		return "seqread", "", ""
	case "write":
		return "seqwrite", "", ""
	case "randread", "randwrite":
		return rw, "", ""
	case "randrw":
		return "randrw", "randread", "randwrite"
	case "readwrite":
		return "seqrw", "seqread", "seqwrite"
	case "":
		return "", "", ""
	}
	return rw, "", ""
}

// nameWorkload names p from what it did; jobName's informative words
// follow. With rw unknown (terse output, fio 2.x JSON), the names are the
// directions that did I/O ("read", "write").
func nameWorkload(p *workload.Workload, jobName string, read, write bool) {
	name, rd, wr := rwNames(p.RW)
	if name == "" {
		switch {
		case read && write:
			name, rd, wr = "rw", "read", "write"
		case write:
			name = "write"
		default:
			name = "read"
		}
	}
	suffix := strings.Join(informativeWords(jobName), "-")
	join := func(s string) string {
		if s == "" || suffix == "" {
			return s
		}
		return s + "-" + suffix
	}
	p.Name, p.ReportRead, p.ReportWrite = join(name), join(rd), join(wr)
}

// guessRW says whether I/O of unknown rw was sequential or random, from
// the job name and then the file name ("randrw.txt", the seed's own
// naming); "" when neither tells. dirs is "read", "write" or "rw".
func guessRW(jobName, source, dirs string) (rw, from string) {
	for _, c := range []struct{ text, from string }{
		{jobName, "the job name " + fmt.Sprintf("%q", jobName)},
		{strings.TrimSuffix(filepath.Base(source), filepath.Ext(source)), "the file name " + fmt.Sprintf("%q", filepath.Base(source))},
	} {
		if c.text == "" || c.text == "." {
			continue
		}
		random, sequential := false, false
		for _, w := range strings.FieldsFunc(strings.ToLower(c.text), func(r rune) bool {
			return !unicode.IsLetter(r)
		}) {
			switch {
			case strings.HasPrefix(w, "rand") || strings.HasPrefix(w, "rnd"):
				random = true
			case strings.HasPrefix(w, "seq"):
				sequential = true
			}
		}
		if random == sequential {
			continue
		}
		switch {
		case random && dirs == "rw":
			return "randrw", c.from
		case random:
			return "rand" + dirs, c.from
		case dirs == "rw":
			return "readwrite", c.from
		}
		return dirs, c.from
	}
	return "", ""
}
