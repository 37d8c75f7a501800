package fio

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// fio's terse output (--minimal, --output-format=terse) is one line per
// job (per group with group_reporting) of semicolon-separated fields; fio
// 2.x and 3.x write terse version 3 unless --terse-version says otherwise.
// Its layout, from fio's HOWTO "Terse output":
//
//	terse_version;fio_version;jobname;groupid;error;
//	READ:  kb;bw_kb;iops;runtime_ms; slat min;max;mean;dev (µs);
//	       clat min;max;mean;dev (µs); 20 clat percentiles "p%=µs";
//	       lat min;max;mean;dev (µs); bw min;max;agg%;mean;dev (KiB/s)   41 fields
//	WRITE: the same 41; TRIM (version 4 only): the same 41;
//	cpu usr%;sys%;ctx;majf;minf; 7 IO depths; 10 µs and 12 ms latency buckets;
//	then per disk: name;read ios;write ios;read merges;write merges;
//	read ticks;write ticks;in queue;util% (9 fields), and with
//	continue_on_error two more: total errors;first error.
//
// kb and KiB/s are 1024-based in every version.
const (
	terseHead     = 5
	terseDir      = 41
	terseTail     = 5 + 7 + 10 + 12
	terseDisk     = 9
	terseErrInfo  = 2
	tersePercents = 20
)

var reTerse = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d+);(fio-[^;]*|[^;]*);`) })

// looksTerse reports whether data has a terse line.
func looksTerse(data []byte) bool {
	for _, line := range splitLines(data) {
		if reTerse().MatchString(line) && strings.Count(line, ";") > 20 {
			return true
		}
	}
	return false
}

// terseFields is the number of fields a terse line of version v has
// before its disk utilisation groups.
func terseFields(v int) (int, bool) {
	switch v {
	case 3:
		return terseHead + 2*terseDir + terseTail, true
	case 4:
		return terseHead + 3*terseDir + terseTail, true
	}
	return 0, false
}

// parseTerse reads terse lines into the document the JSON import reads.
// Other lines (fio's notes) are skipped with a warning; a terse line of
// the wrong length is refused, since every figure after a missing field
// would be read from the wrong place.
func parseTerse(data []byte) (*document, []string, error) {
	doc := &document{}
	var warnings []string
	skipped := 0
	for n, line := range splitLines(data) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !reTerse().MatchString(line) {
			skipped++
			continue
		}
		f := strings.Split(line, ";")
		v, _ := strconv.Atoi(f[0])
		base, ok := terseFields(v)
		if !ok {
			return nil, nil, badOutputf("line %d: terse version %d is not supported (versions 3 and 4 are; fio --terse-version=3)", n+1, v)
		}
		extra := len(f) - base
		if extra < 0 || extra%terseDisk != 0 && (extra-terseErrInfo)%terseDisk != 0 {
			return nil, nil, badOutputf("line %d: terse version %d line with %d fields, want %d plus %d per disk", n+1, v, len(f), base, terseDisk)
		}
		if doc.Version == "" {
			doc.Version = f[1]
		}
		gid, err := strconv.Atoi(f[3])
		if err != nil {
			return nil, nil, badOutputf("line %d: group id %q is not a number", n+1, f[3])
		}
		errno, err := strconv.Atoi(f[4])
		if err != nil {
			return nil, nil, badOutputf("line %d: error field %q is not a number", n+1, f[4])
		}
		j := job{Name: f[2], GroupID: gid, Error: errno}
		dirs := []**direction{&j.Read, &j.Write}
		if v == 4 {
			dirs = append(dirs, &j.Trim)
		}
		for k, dst := range dirs {
			d, err := terseDirection(f[terseHead+k*terseDir : terseHead+(k+1)*terseDir])
			if err != nil {
				return nil, nil, badOutputf("line %d: job %s: %v", n+1, oneLine(j.Name), err)
			}
			*dst = d
		}
		cpu := terseHead + len(dirs)*terseDir
		j.UsrCPU, _ = strconv.ParseFloat(strings.TrimSuffix(f[cpu], "%"), 64)
		j.SysCPU, _ = strconv.ParseFloat(strings.TrimSuffix(f[cpu+1], "%"), 64)
		doc.Jobs = append(doc.Jobs, j)
	}
	if len(doc.Jobs) == 0 {
		return nil, nil, fmt.Errorf("no terse lines: %w", ErrNotFio)
	}
	if skipped > 0 {
		warnings = append(warnings, fmt.Sprintf("skipped %d lines that are not terse output", skipped))
	}
	warnings = append(warnings, fmt.Sprintf("%s terse output gives KB and KB/s in base 2 (KiB): converted to bytes", versionOr(doc.Version, "fio")))
	return doc, warnings, nil
}

// terseDirection converts one direction's 41 fields; nil when it did no
// I/O.
func terseDirection(f []string) (*direction, error) {
	num := func(i int) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSuffix(f[i], "%"), 64)
		if err != nil {
			return 0, fmt.Errorf("field %q is not a number", f[i])
		}
		return v, nil
	}
	// kb, bw, iops, runtime; slat min, max, mean, dev; clat the same;
	// 20 percentiles; lat min, max, mean, dev; bw min, max, agg, mean, dev.
	var vals [terseDir]float64
	for i := range terseDir {
		if i >= 12 && i < 12+tersePercents {
			continue
		}
		v, err := num(i)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	kb, bw, iops, runtime := vals[0], vals[1], vals[2], vals[3]
	if kb == 0 && iops == 0 {
		return nil, nil
	}
	io := kb * 1024
	bwb := bw * 1024
	d := &direction{IOBytes: io, IOKBytes: &kb, BWBytes: &bwb, BW: bw, IOPS: iops, Runtime: runtime}
	cl := &lat{Min: vals[8] * 1e3, Max: vals[9] * 1e3, Mean: vals[10] * 1e3, Percentile: map[string]float64{}}
	for i := 12; i < 12+tersePercents; i++ {
		k, v, ok := strings.Cut(f[i], "%=")
		if !ok {
			return nil, fmt.Errorf("percentile field %q is not p%%=value", f[i])
		}
		us, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("percentile field %q is not p%%=value", f[i])
		}
		cl.Percentile[k] = us * 1e3
	}
	d.ClatNS = cl
	d.LatNS = &lat{Min: vals[32] * 1e3, Max: vals[33] * 1e3, Mean: vals[34] * 1e3}
	return d, nil
}
