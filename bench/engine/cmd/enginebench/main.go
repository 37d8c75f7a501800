// Command enginebench runs one engine.Run with fio-like flags and prints the
// result as JSON. It exists for scripts/bench-vs-fio.sh and profiling; people
// use `diskprep bench`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/diskprep/diskprep/bench/engine"
	"github.com/diskprep/diskprep/bench/engine/hist"
	"github.com/diskprep/diskprep/internal/units"
)

type dirOut struct {
	IOs       uint64          `json:"ios"`
	Bytes     uint64          `json:"io_bytes"`
	IOPS      float64         `json:"iops"`
	BW        float64         `json:"bw_bytes_per_s"`
	LatMinNs  uint64          `json:"lat_min_ns"`
	LatMeanNs float64         `json:"lat_mean_ns"`
	LatP50Ns  uint64          `json:"lat_p50_ns"`
	LatP90Ns  uint64          `json:"lat_p90_ns"`
	LatP99Ns  uint64          `json:"lat_p99_ns"`
	LatP999Ns uint64          `json:"lat_p99_9_ns"`
	LatMaxNs  uint64          `json:"lat_max_ns"`
	PerSecond []engine.Sample `json:"per_second"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "enginebench:", err)
		os.Exit(1)
	}
}

func run() error {
	var p engine.Params
	var rw, bs, size, offset, engineName, data string
	var runtime, ramp time.Duration
	flag.StringVar(&p.Path, "filename", "", "file or block device")
	flag.StringVar(&rw, "rw", "randread", "read, write, randread, randwrite, randrw")
	flag.StringVar(&bs, "bs", "4k", "block size")
	flag.StringVar(&size, "size", "", "region size (default: whole file/device from offset)")
	flag.StringVar(&offset, "offset", "0", "region start")
	flag.IntVar(&p.Jobs, "numjobs", 1, "jobs")
	flag.IntVar(&p.IODepth, "iodepth", 1, "queue depth")
	flag.DurationVar(&runtime, "runtime", 0, "time-based run length (0: one pass)")
	flag.DurationVar(&ramp, "ramp", 0, "warm-up")
	flag.IntVar(&p.RWMixRead, "rwmixread", 50, "read percent for randrw")
	flag.BoolVar(&p.Fsync, "fsync", false, "fdatasync at end of writes")
	flag.Uint64Var(&p.Seed, "seed", 0, "seed")
	flag.BoolVar(&p.Direct, "direct", true, "O_DIRECT")
	flag.StringVar(&engineName, "ioengine", "auto", "auto, sync, io_uring")
	flag.StringVar(&data, "data", "random", "random, zeros, compressible")
	flag.IntVar(&p.Data.CompressPercent, "compress", 0, "compress percent")
	layout := flag.Bool("layout", false, "lay out the file (size bytes) before running")
	flag.Parse()
	p.RW, p.Engine, p.Runtime, p.Ramp = engine.RW(rw), engineName, runtime, ramp
	p.Data.Kind = data
	var err error
	if p.BlockSize, err = parseSize(bs); err != nil {
		return err
	}
	if p.Offset, err = parseSize(offset); err != nil {
		return err
	}
	if size != "" {
		if p.Size, err = parseSize(size); err != nil {
			return err
		}
	} else {
		f, err := os.Open(p.Path)
		if err != nil {
			return err
		}
		end, err := f.Seek(0, 2)
		f.Close()
		if err != nil {
			return err
		}
		p.Size = end - p.Offset
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *layout {
		if err := engine.Layout(ctx, p.Path, p.Offset+p.Size, p.Data); err != nil {
			return err
		}
	}
	res, err := engine.Run(ctx, p)
	if err != nil {
		return err
	}
	out := map[string]any{
		"engine": res.Engine, "direct": res.Direct, "align": res.Align,
		"elapsed_ns": res.Elapsed.Nanoseconds(), "cpu_user_ns": res.CPUUser.Nanoseconds(),
		"cpu_sys_ns": res.CPUSys.Nanoseconds(), "warnings": res.Warnings,
		"read": dir(res.Read, res.Elapsed), "write": dir(res.Write, res.Elapsed),
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func dir(d engine.DirResult, el time.Duration) dirOut {
	h := d.Hist
	if h == nil {
		h = hist.New()
	}
	o := dirOut{IOs: d.IOs, Bytes: d.Bytes, LatMinNs: h.Min(), LatMeanNs: h.Mean(),
		LatP50Ns: h.Percentile(50), LatP90Ns: h.Percentile(90), LatP99Ns: h.Percentile(99),
		LatP999Ns: h.Percentile(99.9), LatMaxNs: h.Max(), PerSecond: d.PerSecond}
	if el > 0 {
		o.IOPS = float64(d.IOs) / el.Seconds()
		o.BW = float64(d.Bytes) / el.Seconds()
	}
	return o
}

func parseSize(s string) (int64, error) {
	v, err := units.ParseSize(s)
	return int64(v), err
}
