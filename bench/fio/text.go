package fio

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fio's normal (human) output, as fio 3.x prints it:
//
//	file1: (g=0): rw=read, bs=(R) 4096KiB-4096KiB, (W) ..., ioengine=psync, iodepth=1
//	fio-3.33
//	file1: (groupid=0, jobs=4): err= 0: pid=7955: Tue Dec  1 08:28:35 2026
//	  read: IOPS=1570, BW=1571MiB/s (1647MB/s)(256MiB/163msec)
//	    clat (usec): min=1409, max=8325, avg=2538.11, stdev=1029.30
//	    clat percentiles (usec):
//	     |  1.00th=[ 1467],  5.00th=[ 1860], ...
//	  cpu          : usr=1.08%, sys=0.15%, ctx=259, majf=0, minf=1066
//	     issued rwts: total=256,0,0,0 short=0,0,0,0 dropped=0,0,0,0
//
// and as fio 2.x printed it (stat.c show_ddir_status of fio 2.x):
//
//	file1: (g=0): rw=read, bs=32M-32M/32M-32M/32M-32M, ioengine=psync, iodepth=1
//	fio-2.17
//	file1: (groupid=0, jobs=16): err= 0: pid=2104: Sat Mar 18 11:02:10 2017
//	  read : io=4172.0MB, bw=389069KB/s, iops=11, runt= 10980msec
//	     issued    : total=r=130/w=0/d=0, short=r=0/w=0/d=0, drop=r=0/w=0/d=0
//
// fio 2.x's KB, MB and GB are 1024-based (its kb_base=1024 default); fio
// 3.x says KiB/MiB for those and kB/MB for powers of 1000. Times carry
// fio's num2str suffixes (max=1973.2K is 1973200).
//
// textRE are the patterns of fio's normal output, compiled on first use:
// every diskprep command would otherwise pay for them at start.
var textRE = sync.OnceValue(func() *textPatterns {
	return &textPatterns{
		reOptionHeader: regexp.MustCompile(`^(\S.*?): \(g=(\d+)\): (rw=.*)$`),
		reJobHeader:    regexp.MustCompile(`^(\S.*?): \(groupid=(\d+), jobs=(\d+)\): err=\s*(-?\d+)(.*)$`),
		reVersion:      regexp.MustCompile(`^fio-(\d+)\.\S*$`),
		reDir3:         regexp.MustCompile(`^\s+(read|write|trim|mixed)\s*: IOPS=([\d.]+[kKMGT]?), BW=([\d.]+)([kKMGTP]i?B|B)/s \([\d.]+[kKMGTP]?i?B/s\)\(([\d.]+)([kKMGTP]i?B|B)/(\d+)msec\)`),
		reDir2:         regexp.MustCompile(`^\s+(read|write|trim|mixed)\s*: io=([\d.]+)([kKMGTP]i?B|B), bw=([\d.]+)([kKMGTP]i?B|B)/s, iops=\s*([\d.]+[kKMGT]?)\s*, runt=\s*(\d+)msec`),
		reLatStat:      regexp.MustCompile(`^\s+(slat|clat|lat)\s+\((nsec|usec|msec|sec)\)\s*:\s*min=\s*([\d.]+[kKMG]?)\s*,\s*max=\s*([\d.]+[kKMG]?)\s*,\s*avg=\s*([\d.]+[kKMG]?)`),
		rePctHeader:    regexp.MustCompile(`^\s+(clat|lat) percentiles \((nsec|usec|msec|sec)\):`),
		rePct:          regexp.MustCompile(`([\d.]+)th=\[\s*([\d.]+[kKMG]?)\]`),
		reCPU:          regexp.MustCompile(`^\s+cpu\s+: usr=([\d.]+)%, sys=([\d.]+)%`),
		reIssued3:      regexp.MustCompile(`^\s+issued rwts?: total=(\d+),(\d+)`),
		reIssued2:      regexp.MustCompile(`^\s+issued\s*: total=r=(\d+)/w=(\d+)`),
		reBS3:          regexp.MustCompile(`bs=\(R\) ([\d.]+[kKMGT]?i?B?)-`),
		reBS2:          regexp.MustCompile(`bs=([\d.]+[kKMGT]?i?B?)-`),
		reIOEngine:     regexp.MustCompile(`ioengine=([^,\s]+)`),
		reIODepth:      regexp.MustCompile(`iodepth=(\d+)`),
		reRW:           regexp.MustCompile(`rw=(\w+)`),
	}
})

type textPatterns struct{ reOptionHeader, reJobHeader, reVersion, reDir3, reDir2, reLatStat, rePctHeader, rePct, reCPU, reIssued3, reIssued2, reBS3, reBS2, reIOEngine, reIODepth, reRW *regexp.Regexp }

// looksNormal reports whether data holds fio's normal output: a job's
// result header "name: (groupid=N, jobs=N): err=".
func looksNormal(data []byte) bool {
	for _, line := range splitLines(data) {
		if textRE().reJobHeader.MatchString(line) {
			return true
		}
	}
	return false
}

// splitLines splits on \n and \r: fio's progress line ends in \r while it
// runs, and a capture of a terminal keeps them.
func splitLines(data []byte) []string {
	var out []string
	for _, l := range strings.FieldsFunc(string(data), func(r rune) bool { return r == '\n' || r == '\r' }) {
		out = append(out, strings.TrimRight(l, " \t"))
	}
	return out
}

// parseNormal reads fio's normal output into the same document the JSON
// import reads. Each result block becomes a job; the options header of
// the job of that name (rw, bs, ioengine, iodepth: all fio prints of
// them) becomes its options, and "jobs=N" of a group_reporting block its
// numjobs.
func parseNormal(data []byte) (*document, []string, error) {
	lines := splitLines(data)
	doc := &document{}
	headers := map[string]map[string]any{}
	var warnings []string
	var cur *job
	var curDir *direction
	major := 0
	var blocks int
	lastHeader, lastStatus := -1, -1
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := textRE().reVersion.FindStringSubmatch(strings.TrimSpace(line)); m != nil && doc.Version == "" {
			doc.Version = strings.TrimSpace(line)
			major, _ = strconv.Atoi(m[1])
			continue
		}
		if m := textRE().reOptionHeader.FindStringSubmatch(line); m != nil {
			headers[m[1]+"/"+m[2]] = headerOptions(m[3])
			continue
		}
		if m := textRE().reJobHeader.FindStringSubmatch(line); m != nil {
			blocks++
			lastHeader = i
			gid, _ := strconv.Atoi(m[2])
			jobs, _ := strconv.Atoi(m[3])
			errno, _ := strconv.Atoi(m[4])
			doc.Jobs = append(doc.Jobs, job{Name: m[1], GroupID: gid, Error: errno})
			cur, curDir = &doc.Jobs[len(doc.Jobs)-1], nil
			opts := map[string]any{}
			for k, v := range headers[m[1]+"/"+m[2]] {
				opts[k] = v
			}
			if jobs > 1 {
				opts["numjobs"] = strconv.Itoa(jobs)
			}
			if len(opts) > 0 {
				cur.Options = opts
			}
			if doc.Timestamp == 0 {
				if t, ok := headerTime(m[5]); ok {
					doc.Timestamp = t.Unix()
				}
			}
			continue
		}
		if strings.HasPrefix(line, "Run status group") || strings.HasPrefix(line, "Disk stats") {
			if strings.HasPrefix(line, "Run status group") {
				lastStatus = i
			}
			cur, curDir = nil, nil
			continue
		}
		if cur == nil {
			continue
		}
		if m := textRE().reDir3.FindStringSubmatch(line); m != nil {
			d, err := dir3(m)
			if err != nil {
				return nil, nil, badOutputf("job %s: %s: %v", oneLine(cur.Name), strings.TrimSpace(line), err)
			}
			curDir = setDir(cur, m[1], d)
			continue
		}
		if m := textRE().reDir2.FindStringSubmatch(line); m != nil {
			d, err := dir2(m)
			if err != nil {
				return nil, nil, badOutputf("job %s: %s: %v", oneLine(cur.Name), strings.TrimSpace(line), err)
			}
			curDir = setDir(cur, m[1], d)
			if major == 0 {
				major = 2 // the 2.x layout, whatever the version line said
			}
			continue
		}
		if m := textRE().reLatStat.FindStringSubmatch(line); m != nil && curDir != nil {
			scale := timeScale(m[2])
			l := &lat{Min: suffixed(m[3]) * scale, Max: suffixed(m[4]) * scale, Mean: suffixed(m[5]) * scale}
			switch m[1] {
			case "clat":
				keep := curDir.ClatNS
				if keep != nil {
					l.Percentile = keep.Percentile
				}
				curDir.ClatNS = l
			case "lat":
				keep := curDir.LatNS
				if keep != nil {
					l.Percentile = keep.Percentile
				}
				curDir.LatNS = l
			}
			continue
		}
		if m := textRE().rePctHeader.FindStringSubmatch(line); m != nil && curDir != nil {
			scale := timeScale(m[2])
			pct := map[string]float64{}
			for i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "|") {
				i++
				for _, pm := range textRE().rePct.FindAllStringSubmatch(lines[i], -1) {
					pct[pm[1]] = suffixed(pm[2]) * scale
				}
			}
			target := &curDir.ClatNS
			if m[1] == "lat" {
				target = &curDir.LatNS
			}
			if *target == nil {
				*target = &lat{}
			}
			(*target).Percentile = pct
			continue
		}
		if m := textRE().reCPU.FindStringSubmatch(line); m != nil {
			cur.UsrCPU, _ = strconv.ParseFloat(m[1], 64)
			cur.SysCPU, _ = strconv.ParseFloat(m[2], 64)
			continue
		}
		m := textRE().reIssued3.FindStringSubmatch(line)
		if m == nil {
			m = textRE().reIssued2.FindStringSubmatch(line)
		}
		if m != nil {
			for k, d := range []*direction{cur.Read, cur.Write} {
				if d != nil {
					n, _ := strconv.ParseFloat(m[k+1], 64)
					d.TotalIOs = &n
				}
			}
		}
	}
	if blocks == 0 {
		return nil, nil, fmt.Errorf("no job results in the text: %w", ErrNotFio)
	}
	// fio ends every group with its "Run status group" summary: output
	// that stops inside a job's block was cut off.
	if lastStatus < lastHeader {
		return nil, nil, badOutputf("truncated fio output: job %s has no \"Run status group\" summary after it", oneLine(doc.Jobs[len(doc.Jobs)-1].Name))
	}
	for _, j := range doc.Jobs {
		if j.Read == nil && j.Write == nil && j.Trim == nil && j.Mixed == nil && j.Error == 0 {
			return nil, nil, badOutputf("job %s: a result header without read or write figures (truncated output?)", oneLine(j.Name))
		}
	}
	if major == 2 {
		warnings = append(warnings, fmt.Sprintf("%s printed KB, MB and KB/s, MB/s in base 2 (KiB, MiB): converted to bytes", versionOr(doc.Version, "fio 2.x")))
	}
	return doc, warnings, nil
}

func versionOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// headerOptions reads what fio prints of a job's options in its header:
// rw, bs (the read size of "(R) 4096KiB-4096KiB, (W) ..." or
// "32M-32M/32M-32M"), ioengine and iodepth.
func headerOptions(s string) map[string]any {
	opts := map[string]any{}
	if m := textRE().reRW.FindStringSubmatch(s); m != nil {
		opts["rw"] = m[1]
	}
	if m := textRE().reBS3.FindStringSubmatch(s); m != nil {
		opts["bs"] = m[1]
	} else if m := textRE().reBS2.FindStringSubmatch(s); m != nil {
		opts["bs"] = m[1]
	}
	if m := textRE().reIOEngine.FindStringSubmatch(s); m != nil {
		opts["ioengine"] = m[1]
	}
	if m := textRE().reIODepth.FindStringSubmatch(s); m != nil {
		opts["iodepth"] = m[1]
	}
	return opts
}

// headerTime reads the local time fio prints after the pid
// (": pid=7955: Tue Dec  1 08:28:35 2026"); fio does not print the zone.
func headerTime(rest string) (time.Time, bool) {
	i := strings.Index(rest, "pid=")
	if i < 0 {
		return time.Time{}, false
	}
	_, after, ok := strings.Cut(rest[i:], ": ")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse("Mon Jan _2 15:04:05 2006", strings.TrimSpace(after))
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

func setDir(j *job, name string, d *direction) *direction {
	switch name {
	case "read":
		j.Read = d
	case "write":
		j.Write = d
	case "trim":
		j.Trim = d
	case "mixed":
		j.Mixed = d
	}
	return d
}

// dir3 converts a fio 3.x direction line: IOPS=1570, BW=1571MiB/s
// (1647MB/s)(256MiB/163msec).
func dir3(m []string) (*direction, error) {
	bw, err := bytesOf(m[3], m[4], false)
	if err != nil {
		return nil, err
	}
	io, err := bytesOf(m[5], m[6], false)
	if err != nil {
		return nil, err
	}
	return newDirection(suffixed(m[2]), bw, io, m[7]), nil
}

// dir2 converts a fio 2.x direction line: io=4172.0MB, bw=389069KB/s,
// iops=11, runt= 10980msec, whose KB and MB are 1024-based.
func dir2(m []string) (*direction, error) {
	io, err := bytesOf(m[2], m[3], true)
	if err != nil {
		return nil, err
	}
	bw, err := bytesOf(m[4], m[5], true)
	if err != nil {
		return nil, err
	}
	return newDirection(suffixed(m[6]), bw, io, m[7]), nil
}

func newDirection(iops, bw, io float64, runtime string) *direction {
	rt, _ := strconv.ParseFloat(runtime, 64)
	kib := io / 1024
	return &direction{IOBytes: io, IOKBytes: &kib, BWBytes: &bw, BW: bw / 1024, IOPS: iops, Runtime: rt}
}

// bytesOf converts "4172.0" "MB" to bytes. base2 says fio 2.x printed it:
// its KB and MB are KiB and MiB. In fio 3.x, KiB is 1024 and kB 1000.
func bytesOf(num, unit string, base2 bool) (float64, error) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("bad number %q", num)
	}
	u := strings.ToUpper(unit)
	binary := base2 || strings.HasSuffix(u, "IB")
	u = strings.TrimSuffix(strings.TrimSuffix(u, "IB"), "B")
	exp := strings.Index("KMGTP", u) + 1
	if u != "" && exp == 0 {
		return 0, fmt.Errorf("unknown unit %q", unit)
	}
	mult := 1.0
	for range exp {
		if binary {
			mult *= 1024
		} else {
			mult *= 1000
		}
	}
	return f * mult, nil
}

// suffixed reads a figure with fio's num2str suffix for counts and times
// (powers of 1000): "24.5k" IOPS, "1973.2K" µs.
func suffixed(s string) float64 {
	mult := 1.0
	switch s[len(s)-1] {
	case 'k', 'K':
		mult, s = 1e3, s[:len(s)-1]
	case 'M':
		mult, s = 1e6, s[:len(s)-1]
	case 'G':
		mult, s = 1e9, s[:len(s)-1]
	case 'T':
		mult, s = 1e12, s[:len(s)-1]
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f * mult
}

func timeScale(unit string) float64 {
	switch unit {
	case "usec":
		return 1e3
	case "msec":
		return 1e6
	case "sec":
		return 1e9
	}
	return 1
}
