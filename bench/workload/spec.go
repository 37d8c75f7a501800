// Package workload is what a bench run is asked to do, decided before
// anything is touched: a workload SPEC parsed (ParseSpec), the built-in
// sets (LookupSet), and a request resolved into the ordered, validated
// workloads to run with the command-line overrides applied (Plan). It is
// pure: no file, device or clock.
package workload

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/diskprep/diskprep/internal/units"
)

// ErrUsage is matched (errors.Is) by every error caused by bad input: an
// unknown set or workload key, a bad size, a block size the target cannot
// align to. Its text does not appear in the messages.
var ErrUsage = errors.New("usage error")

// usageError marks err as bad input without adding words to its message.
type usageError struct{ err error }

func (u usageError) Error() string        { return u.err.Error() }
func (u usageError) Unwrap() error        { return u.err }
func (u usageError) Is(target error) bool { return target == ErrUsage }

// Usagef makes an error that wraps ErrUsage with the given message, for
// every room of bench that refuses bad input (run, the store).
func Usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// Limits for jobs and iodepth: beyond them a run measures the scheduler, not
// the disk, and a typo (jobs=1600) would start thousands of threads.
const (
	MaxJobs    = 1024
	MaxIODepth = 4096
)

// Workload is one fio-like job description, as planned and as recorded.
// Durations are nanoseconds in JSON (time.Duration), hence the _ns names.
type Workload struct {
	Name        string        `json:"name"`
	RW          string        `json:"rw"` // read, write, randread, randwrite, randrw
	BlockBytes  uint64        `json:"bs_bytes"`
	SizeBytes   uint64        `json:"size_bytes"`
	OffsetBytes uint64        `json:"offset_bytes"`
	Jobs        int           `json:"jobs"`
	IODepth     int           `json:"iodepth"`
	Runtime     time.Duration `json:"runtime_ns"` // 0: size-based, one pass over size per job
	Ramp        time.Duration `json:"ramp_ns"`
	RWMixRead   int           `json:"rwmixread"` // percent reads of randrw
	Fsync       bool          `json:"fsync"`     // fdatasync at the end of writes
	Seed        uint64        `json:"seed"`
	Direct      bool          `json:"direct"`
	Engine      string        `json:"engine"` // requested: auto, sync, io_uring
	Data        string        `json:"data"`   // random, zeros, compress:NN
	// Distribution spreads random offsets as fio's random_distribution:
	// zipf:THETA or zoned:ACCESS/SIZE:... (zoned:90/10:10/90 sends 90% of
	// the I/O to the first 10% of the data); "" (or "random") is the
	// uniform random map. It is part of the workload's identity.
	Distribution string `json:"distribution,omitempty"`
	// Fresh makes the test file new (empty) before this workload, so a write
	// is a first write into unallocated space (the video set's point).
	Fresh bool `json:"fresh,omitempty"`
	// ReportRead and ReportWrite name the directions of a mixed workload in
	// tables and comparisons (fileserver's randrw shows as randread and
	// randwrite); empty means "<name>-read" and "<name>-write".
	ReportRead  string `json:"report_read_as,omitempty"`
	ReportWrite string `json:"report_write_as,omitempty"`
	// Unknown lists the parameters the source did not record (an import
	// of fio's text or terse output does not show size or direct, say),
	// by their compare keys: rw, bs, size, jobs, iodepth, runtime,
	// rwmixread, direct, engine. Their fields hold zero values that mean
	// nothing; compare matches workloads on the known ones.
	Unknown []string `json:"unknown_params,omitempty"`

	// autoName rebuilds Name after overrides, for sets whose names encode
	// their parameters (cdm's seq1m-q8t1-read).
	autoName func(Workload) string
}

// DefaultWorkload is what a --workload SPEC starts from before its keys and
// the command-line flags apply.
func DefaultWorkload() Workload {
	return Workload{
		RW:         "read",
		BlockBytes: 4 << 10,
		SizeBytes:  1 << 30,
		Jobs:       1,
		IODepth:    1,
		Runtime:    10 * time.Second,
		RWMixRead:  50,
		Direct:     true,
		Engine:     "auto",
		Data:       "random",
	}
}

// Reads reports whether the workload reads; Writes whether it writes.
func (w Workload) Reads() bool  { return w.RW == "read" || w.RW == "randread" || w.RW == "randrw" }
func (w Workload) Writes() bool { return w.RW == "write" || w.RW == "randwrite" || w.RW == "randrw" }

// Random reports whether offsets are random.
func (w Workload) Random() bool { return strings.HasPrefix(w.RW, "rand") }

// RowName is the name a direction ("read" or "write") of w goes by in tables.
func (w Workload) RowName(dir string) string {
	mixed := w.RW == "randrw"
	switch {
	case dir == "read" && w.ReportRead != "":
		return w.ReportRead
	case dir == "write" && w.ReportWrite != "":
		return w.ReportWrite
	case mixed:
		return w.Name + "-" + dir
	}
	return w.Name
}

// specKeys maps accepted keys (and the fio spellings people paste) to a setter.
var specKeys = map[string]func(w *Workload, v string) error{
	"name": func(w *Workload, v string) error { w.Name = v; return nil },
	"rw": func(w *Workload, v string) error {
		switch v {
		case "read", "write", "randread", "randwrite", "randrw":
			w.RW = v
			return nil
		case "readwrite", "rw":
			return errors.New("sequential mixed I/O is not supported, use randrw")
		}
		return errors.New("want read, write, randread, randwrite or randrw")
	},
	"bs":   func(w *Workload, v string) error { return setSize(&w.BlockBytes, v) },
	"size": func(w *Workload, v string) error { return setSize(&w.SizeBytes, v) },
	"offset": func(w *Workload, v string) error {
		return setSize(&w.OffsetBytes, v)
	},
	"jobs":      func(w *Workload, v string) error { return setInt(&w.Jobs, v) },
	"iodepth":   func(w *Workload, v string) error { return setInt(&w.IODepth, v) },
	"runtime":   func(w *Workload, v string) error { return setDuration(&w.Runtime, v) },
	"ramp":      func(w *Workload, v string) error { return setDuration(&w.Ramp, v) },
	"rwmixread": func(w *Workload, v string) error { return setInt(&w.RWMixRead, v) },
	"fsync":     func(w *Workload, v string) error { return setBool(&w.Fsync, v) },
	"direct":    func(w *Workload, v string) error { return setBool(&w.Direct, v) },
	"seed": func(w *Workload, v string) error {
		n, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			return errors.New("want a non-negative integer")
		}
		w.Seed = n
		return nil
	},
	"engine": func(w *Workload, v string) error {
		switch v {
		case "auto", "sync", "io_uring":
			w.Engine = v
		case "psync", "pvsync":
			w.Engine = "sync"
		default:
			return errors.New("want auto, sync or io_uring")
		}
		return nil
	},
	"data": func(w *Workload, v string) error {
		if _, _, err := ParseData(v); err != nil {
			return err
		}
		w.Data = v
		return nil
	},
	"distribution": func(w *Workload, v string) error {
		d, err := CanonicalDistribution(v)
		if err != nil {
			return err
		}
		w.Distribution = d
		return nil
	},
}

// fio spellings accepted as aliases.
var specAliases = map[string]string{
	"numjobs":   "jobs",
	"blocksize": "bs",
	"ramp_time": "ramp",
	"ioengine":  "engine",
	"end_fsync": "fsync",
	"randseed":  "seed",
	"readwrite": "rw",
	// fio's name for it
	"random_distribution": "distribution",
}

// ParseSpec parses a workload SPEC such as
// "name=seqread,rw=read,bs=32M,size=2G,jobs=16,iodepth=1,runtime=10s" on top
// of base, and returns the workload and the set of keys the spec gave (so
// command-line flags fill only what the spec left out). Errors wrap ErrUsage.
func ParseSpec(spec string, base Workload) (Workload, map[string]bool, error) {
	w := base
	given := map[string]bool{}
	if strings.TrimSpace(spec) == "" {
		return w, nil, Usagef("workload spec is empty")
	}
	for _, kv := range strings.Split(spec, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || v == "" {
			return w, nil, Usagef("workload spec %q: %q is not key=value", spec, kv)
		}
		if a, ok := specAliases[k]; ok {
			k = a
		}
		set, ok := specKeys[k]
		if !ok {
			return w, nil, Usagef("workload spec %q: unknown key %q (known: %s)", spec, k, knownKeys())
		}
		if given[k] {
			return w, nil, Usagef("workload spec %q: key %q given twice", spec, k)
		}
		if err := set(&w, v); err != nil {
			return w, nil, Usagef("workload spec %q: %s: %w", spec, printable(k+"="+v), err)
		}
		given[k] = true
	}
	if !given["name"] {
		w.Name = defaultName(w)
	}
	return w, given, nil
}

// printable quotes s when it holds control characters, which would break
// the one-line error a usage error is shown as.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

func knownKeys() string {
	return "name, rw, bs, size, offset, jobs, iodepth, runtime, ramp, rwmixread, fsync, seed, direct, engine, data, distribution"
}

// defaultName names an unnamed spec after what it does: randread-4k-q32t1.
func defaultName(w Workload) string {
	return fmt.Sprintf("%s-%s-q%dt%d", w.RW, strings.ToLower(units.FormatSizeShort(w.BlockBytes)), w.IODepth, w.Jobs)
}

func setSize(dst *uint64, v string) error {
	n, err := units.ParseSize(v)
	if err != nil {
		return err
	}
	*dst = n
	return nil
}

func setInt(dst *int, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return errors.New("want an integer")
	}
	*dst = n
	return nil
}

func setDuration(dst *time.Duration, v string) error {
	d, err := units.ParseDuration(v)
	if err != nil {
		return err
	}
	*dst = d
	return nil
}

func setBool(dst *bool, v string) error {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		*dst = true
	case "0", "false", "no", "off":
		*dst = false
	default:
		return errors.New("want 1 or 0")
	}
	return nil
}

// ParseData splits a data pattern, "random", "zeros" or "compress:NN" (NN
// percent zeros), into its kind and percentage.
func ParseData(v string) (kind string, percent int, err error) {
	switch {
	case v == "random" || v == "zeros":
		return v, 0, nil
	case strings.HasPrefix(v, "compress:"):
		n, err := strconv.Atoi(strings.TrimPrefix(v, "compress:"))
		if err != nil || n < 0 || n > 100 {
			return "", 0, errors.New("compress:NN wants a percentage 0..100")
		}
		return "compress", n, nil
	}
	return "", 0, errors.New("want random, zeros or compress:NN")
}

// Validate checks w on its own (the target's alignment is checked at run
// time). Errors wrap ErrUsage.
func (w Workload) Validate() error {
	bad := func(format string, args ...any) error {
		return Usagef("workload %s: %s", w.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case w.Name == "" || strings.IndexFunc(w.Name, badNameRune) >= 0:
		return Usagef("workload name %q: use letters, digits, '.', '_' and '-' only", w.Name)
	case w.BlockBytes == 0 || w.BlockBytes%512 != 0:
		return bad("bs %d is not a multiple of 512", w.BlockBytes)
	case w.SizeBytes < w.BlockBytes:
		return bad("size %s is smaller than bs %s", units.FormatSize(w.SizeBytes), units.FormatSize(w.BlockBytes))
	case w.OffsetBytes%512 != 0:
		return bad("offset %d is not a multiple of 512", w.OffsetBytes)
	case w.Jobs < 1 || w.Jobs > MaxJobs:
		return bad("jobs %d out of range 1..%d", w.Jobs, MaxJobs)
	case w.IODepth < 1 || w.IODepth > MaxIODepth:
		return bad("iodepth %d out of range 1..%d", w.IODepth, MaxIODepth)
	case w.RWMixRead < 0 || w.RWMixRead > 100:
		return bad("rwmixread %d out of range 0..100", w.RWMixRead)
	case w.Runtime > 0 && w.Runtime < 100*time.Millisecond:
		return bad("runtime %s is too short to measure", w.Runtime)
	}
	if _, _, err := ParseData(w.Data); err != nil {
		return bad("data %q: %v", w.Data, err)
	}
	if _, err := ParseDistribution(w.Distribution); err != nil {
		return bad("distribution %q: %v", w.Distribution, err)
	}
	if w.Distribution != "" && !w.Random() {
		return bad("distribution %s needs random I/O (rw=randread, randwrite or randrw), not rw=%s", w.Distribution, w.RW)
	}
	if w.Engine != "auto" && w.Engine != "sync" && w.Engine != "io_uring" {
		return bad("engine %q: want auto, sync or io_uring", w.Engine)
	}
	if !w.Reads() && !w.Writes() {
		return bad("rw %q: want read, write, randread, randwrite or randrw", w.RW)
	}
	return nil
}

func badNameRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
}
