package workload

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/diskprep/diskprep/internal/suggest"
	"github.com/diskprep/diskprep/internal/units"
)

// Set is a named, built-in list of workloads (DESIGN.md "Built-in workload sets").
type Set struct {
	Name        string
	Description string
	Workloads   []Workload
}

// DefaultSet runs when neither a set nor a workload is asked for: it is short
// and gentle on any disk.
const DefaultSet = "quick"

// SetNames lists the built-in sets in a stable order.
func SetNames() []string {
	names := make([]string, 0, len(setBuilders))
	for n := range setBuilders {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupSet returns a fresh copy of the named built-in set.
func LookupSet(name string) (Set, error) {
	b, ok := setBuilders[name]
	if !ok {
		return Set{}, Usagef("unknown workload set %q%s (known: %s)", name, suggest.Hint(name, SetNames(), ""), strings.Join(SetNames(), ", "))
	}
	return b(), nil
}

var setBuilders = map[string]func() Set{
	"fileserver": fileserverSet,
	"cdm":        cdmSet,
	"nvme":       nvmeSet,
	"video":      videoSet,
	"quick":      quickSet,
}

// fileserverSet is the home file-server comparison the tool was born from:
// large blocks, many streams, O_DIRECT. Its randrw with 32M blocks over 2G
// touches only 64 offsets; the warning about it is deliberate and true.
func fileserverSet() Set {
	base := Workload{
		BlockBytes: 32 << 20, SizeBytes: 2 << 30, Jobs: 16, IODepth: 1,
		Runtime: 10 * time.Second, RWMixRead: 50, Direct: true, Engine: "auto", Data: "random",
	}
	seqread, seqwrite, randrw := base, base, base
	seqread.Name, seqread.RW = "seqread", "read"
	seqwrite.Name, seqwrite.RW = "seqwrite", "write"
	randrw.Name, randrw.RW = "randrw", "randrw"
	randrw.ReportRead, randrw.ReportWrite = "randread", "randwrite"
	return Set{
		Name:        "fileserver",
		Description: "seqread, seqwrite, randrw 50/50; bs 32M, size 2G, 16 jobs, 10 s, O_DIRECT",
		Workloads:   []Workload{seqread, seqwrite, randrw},
	}
}

// cdmTest is one CrystalDiskMark test: SEQ1M Q8T1 is sequential, 1 MiB
// blocks, queue depth 8, one thread.
type cdmTest struct {
	random  bool
	bs      uint64
	qd, thr int
}

// cdmName names a workload as CrystalDiskMark does, without spaces so it
// survives CSV and shells: "seq1m-q8t1-read", "rnd4k-q32t16-write".
func cdmName(w Workload) string {
	kind := "seq"
	if w.Random() {
		kind = "rnd"
	}
	dir := "read"
	if w.Writes() {
		dir = "write"
	}
	return fmt.Sprintf("%s%s-q%dt%d-%s", kind, strings.ToLower(units.FormatSizeShort(w.BlockBytes)), w.IODepth, w.Jobs, dir)
}

// cdmWorkloads runs every test's read, then every test's write, in the order
// CrystalDiskMark's "All" button does.
func cdmWorkloads(tests []cdmTest, size uint64, runtime time.Duration) []Workload {
	var out []Workload
	for _, write := range []bool{false, true} {
		for _, t := range tests {
			w := Workload{
				BlockBytes: t.bs, SizeBytes: size, Jobs: t.thr, IODepth: t.qd,
				Runtime: runtime, RWMixRead: 50, Direct: true, Engine: "auto", Data: "random",
				autoName: cdmName,
			}
			switch {
			case t.random && write:
				w.RW = "randwrite"
			case t.random:
				w.RW = "randread"
			case write:
				w.RW = "write"
			default:
				w.RW = "read"
			}
			w.Name = cdmName(w)
			out = append(out, w)
		}
	}
	return out
}

func cdmSet() Set {
	return Set{
		Name:        "cdm",
		Description: "CrystalDiskMark default: SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1, read and write; 1 GiB, 5 s",
		Workloads: cdmWorkloads([]cdmTest{
			{false, 1 << 20, 8, 1},
			{false, 1 << 20, 1, 1},
			{true, 4 << 10, 32, 1},
			{true, 4 << 10, 1, 1},
		}, 1<<30, 5*time.Second),
	}
}

func nvmeSet() Set {
	return Set{
		Name:        "nvme",
		Description: "CrystalDiskMark NVMe preset: SEQ1M Q8T1, SEQ128K Q32T1, RND4K Q32T16, RND4K Q1T1, read and write; 1 GiB, 5 s",
		Workloads: cdmWorkloads([]cdmTest{
			{false, 1 << 20, 8, 1},
			{false, 128 << 10, 32, 1},
			{true, 4 << 10, 32, 16},
			{true, 4 << 10, 1, 1},
		}, 1<<30, 5*time.Second),
	}
}

// videoSet writes one large file into fresh space, reads it, rewrites it and
// reads it again, each exactly once (size-based): a thin or lazy-zeroed
// virtual disk pays on the first write and not on the rewrite, and the two
// are reported apart.
func videoSet() Set {
	base := Workload{
		BlockBytes: 1 << 20, SizeBytes: 8 << 30, Jobs: 1, IODepth: 1,
		RWMixRead: 50, Direct: true, Engine: "auto", Data: "random",
	}
	first, read, rewrite, reread := base, base, base, base
	first.Name, first.RW, first.Fresh, first.Fsync = "video-first-write", "write", true, true
	read.Name, read.RW = "video-read", "read"
	rewrite.Name, rewrite.RW, rewrite.Fsync = "video-rewrite", "write", true
	reread.Name, reread.RW = "video-reread", "read"
	return Set{
		Name:        "video",
		Description: "one 8 GiB file, 1M blocks: first write, read, rewrite, read again (size-based)",
		Workloads:   []Workload{first, read, rewrite, reread},
	}
}

func quickSet() Set {
	base := Workload{
		SizeBytes: 256 << 20, Jobs: 1, IODepth: 1, Runtime: 2 * time.Second,
		RWMixRead: 50, Direct: true, Engine: "auto", Data: "random",
	}
	mk := func(name, rw string, bs uint64) Workload {
		w := base
		w.Name, w.RW, w.BlockBytes = name, rw, bs
		return w
	}
	return Set{
		Name:        "quick",
		Description: "smoke test: seq read/write 1M and rand read/write 4K, 256 MiB, 2 s each",
		Workloads: []Workload{
			mk("seq1m-read", "read", 1<<20),
			mk("seq1m-write", "write", 1<<20),
			mk("rnd4k-read", "randread", 4<<10),
			mk("rnd4k-write", "randwrite", 4<<10),
		},
	}
}
