package workload

import (
	"strconv"
	"strings"
	"time"
)

// Overrides are the command-line flags that change every workload of a set
// (and fill what a --workload SPEC left out). Zero values mean "not given".
type Overrides struct {
	Runtime  time.Duration // applies to time-based workloads only: video stays size-based
	Size     uint64
	Jobs     int
	IODepth  int
	BS       uint64
	Engine   string
	NoDirect bool
}

// Request is one `diskprep bench` invocation.
type Request struct {
	Target    string   // directory, regular file or block device
	Set       string   // built-in set; "" with no Specs means DefaultSet
	Specs     []string // --workload SPECs, instead of a set
	Overrides Overrides
	Repeat    int // each workload this many times; 0 means 1
	// RepeatAuto repeats each workload until the 95% interval of its
	// median is within ±3.5%, at least AutoRepeatMin and at most Repeat
	// times (--repeat auto[:MAX]).
	RepeatAuto bool
	// SteadyState runs rounds of every workload until its last
	// record.SteadyWindow rounds are steady (SNIA PTS), at most
	// record.SteadyMaxRounds (--steady-state).
	SteadyState bool
	// Precondition writes the whole raw device twice, sequentially,
	// before the workloads (--precondition; needs AllowDeviceWrite).
	Precondition     bool
	Label            string
	AllowDeviceWrite bool
	KeepPartial      bool
}

// MaxRepeat bounds --repeat: more rounds add time, not information.
const MaxRepeat = 100

// --repeat auto: at least AutoRepeatMin runs, at most AutoRepeatDefaultMax
// unless auto:MAX says otherwise.
const (
	AutoRepeatMin        = 3
	AutoRepeatDefaultMax = 10
)

// ParseRepeat reads --repeat: a count N, or auto, or auto:MAX. flag names
// the flag in errors. Errors wrap ErrUsage.
func ParseRepeat(flag, v string) (n int, auto bool, err error) {
	v = strings.TrimSpace(v)
	if rest, ok := strings.CutPrefix(v, "auto"); ok {
		if rest == "" {
			return AutoRepeatDefaultMax, true, nil
		}
		m, ok := strings.CutPrefix(rest, ":")
		n, err := strconv.Atoi(m)
		if !ok || err != nil {
			return 0, false, Usagef("%s %s: want N, auto or auto:MAX", flag, v)
		}
		if n < AutoRepeatMin || n > MaxRepeat {
			return 0, false, Usagef("%s %s: MAX must be %d..%d (auto runs each workload at least %d times)", flag, v, AutoRepeatMin, MaxRepeat, AutoRepeatMin)
		}
		return n, true, nil
	}
	n, err = strconv.Atoi(v)
	if err != nil {
		return 0, false, Usagef("%s %s: want N, auto or auto:MAX", flag, v)
	}
	if n < 1 {
		return 0, false, Usagef("%s %d: must be at least 1", flag, n)
	}
	return n, false, nil
}

// SetName is the set a request runs: the named one, "custom" for specs.
func (r Request) SetName() string {
	switch {
	case len(r.Specs) > 0:
		return "custom"
	case r.Set == "":
		return DefaultSet
	}
	return r.Set
}

// Plan resolves a request into the workloads to run, in order, without
// touching the target: the set (or specs), the overrides, validation and
// unique names. Errors wrap ErrUsage.
func Plan(req Request) ([]Workload, error) {
	if req.Set != "" && len(req.Specs) > 0 {
		return nil, Usagef("give either --set or --workload, not both")
	}
	if req.Repeat < 0 || req.Repeat > MaxRepeat {
		return nil, Usagef("repeat %d out of range 1..%d", req.Repeat, MaxRepeat)
	}
	if req.RepeatAuto && req.Repeat < AutoRepeatMin {
		return nil, Usagef("repeat auto:%d: MAX must be at least %d", req.Repeat, AutoRepeatMin)
	}
	if req.SteadyState && (req.RepeatAuto || req.Repeat > 1) {
		return nil, Usagef("--steady-state runs rounds until the workload is steady: it does not take --repeat")
	}
	if req.Overrides.Jobs < 0 || req.Overrides.IODepth < 0 {
		return nil, Usagef("jobs and iodepth must be at least 1")
	}
	if e := req.Overrides.Engine; e != "" && e != "auto" && e != "sync" && e != "io_uring" {
		return nil, Usagef("engine %q: want auto, sync or io_uring", e)
	}
	var out []Workload
	if len(req.Specs) > 0 {
		for _, spec := range req.Specs {
			w, given, err := ParseSpec(spec, DefaultWorkload())
			if err != nil {
				return nil, err
			}
			w = req.Overrides.apply(w, given)
			if !given["name"] {
				w.Name = defaultName(w)
			}
			out = append(out, w)
		}
	} else {
		set, err := LookupSet(req.SetName())
		if err != nil {
			return nil, err
		}
		named := map[string]bool{}
		for _, w := range set.Workloads {
			w = req.Overrides.apply(w, nil)
			if w.autoName != nil {
				w.Name = w.autoName(w)
				// Overrides can make two of a set's tests the same
				// (cdm's Q8T1 and Q1T1 under --iodepth 4): run it once.
				if named[w.Name] {
					continue
				}
			}
			named[w.Name] = true
			out = append(out, w)
		}
	}
	seen := map[string]bool{}
	for _, w := range out {
		if err := w.Validate(); err != nil {
			return nil, err
		}
		if seen[w.Name] {
			return nil, Usagef("workload name %q used twice (name each --workload with name=)", w.Name)
		}
		seen[w.Name] = true
		if req.SteadyState && w.Runtime == 0 {
			return nil, Usagef("--steady-state: workload %s is size-based (runtime=0): steady state is judged on rounds of one length; give it a runtime", w.Name)
		}
	}
	return out, nil
}

// apply sets every given override on w, except the keys a spec gave itself.
func (o Overrides) apply(w Workload, given map[string]bool) Workload {
	if o.Runtime > 0 && !given["runtime"] && w.Runtime > 0 {
		w.Runtime = o.Runtime
	}
	if o.Size > 0 && !given["size"] {
		w.SizeBytes = o.Size
	}
	if o.Jobs > 0 && !given["jobs"] {
		w.Jobs = o.Jobs
	}
	if o.IODepth > 0 && !given["iodepth"] {
		w.IODepth = o.IODepth
	}
	if o.BS > 0 && !given["bs"] {
		w.BlockBytes = o.BS
	}
	if o.Engine != "" && !given["engine"] {
		w.Engine = o.Engine
	}
	if o.NoDirect && !given["direct"] {
		w.Direct = false
	}
	return w
}
