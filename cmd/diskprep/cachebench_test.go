package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
)

// cachebench destroys what is on both devices: what is there is shown and
// confirmed (a terminal's answer, or --yes) before anything is written,
// as bench --allow-device-write does; a blank pair needs no question.
func TestPrivilegedCachebenchShowsWhatItDestroys(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4")
	results := filepath.Join(t.TempDir(), "results")
	origin := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	cache := testenv.NewLoop(t, 32<<20, testenv.LoopOptions{})
	for dev, label := range map[string]string{origin.Dev: "keep", cache.Dev: "fast"} {
		if out, err := testenv.Run("mkfs.ext4", "-q", "-F", "-L", label, dev); err != nil {
			t.Fatalf("mkfs.ext4: %v %s", err, out)
		}
	}
	before, beforeCache := fileSum(t, origin.Image), fileSum(t, cache.Image)
	args := []string{"cachebench", origin.Dev, "--cache-device", cache.Dev, "--runtime", "1s", "--repeat", "1", "--results", results}

	code, _, stderr := runCLI(t, args...)
	if code != exitRefused || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "refusing to write to "+origin.Dev) ||
		!strings.Contains(stderr, "cachebench destroys") || !strings.Contains(stderr, `ext4 label "keep"`) || !strings.Contains(stderr, "pass --yes") {
		t.Errorf("no terminal, no --yes: exit %d %q", code, stderr)
	}
	for _, answer := range []string{"n\n", ""} {
		var errb bytes.Buffer
		e := &env{Stdin: strings.NewReader(answer), Stdout: io.Discard, Stderr: &errb, IsTerminal: true, ResultsDir: results, Quiet: true}
		err := runCachebench(context.Background(), cachebenchOptions{Origin: origin.Dev, CacheDevice: cache.Dev, Kind: "lvmcache",
			Runtime: "1s", Repeat: 1}, liveMachine(), e)
		if !strings.Contains(errb.String(), "About to write to "+origin.Dev+" (cachebench builds a cache on it)") || !strings.Contains(errb.String(), `ext4 label "keep"`) {
			t.Errorf("answer %q: prompt %q", answer, errb.String())
		}
		if exitCode(err) != exitRefused {
			t.Errorf("answer %q: %v (exit %d)", answer, err, exitCode(err))
		}
	}
	// Yes for the origin, no answer for the cache device: both asked
	// about, from one read of the facts.
	var errb bytes.Buffer
	m, reads := liveMachine(), 0
	facts := m.readFacts
	m.readFacts = func(ctx context.Context, root string, e *env) (*hwinfo.Host, error) {
		reads++
		return facts(ctx, root, e)
	}
	e := &env{Stdin: strings.NewReader("y\n"), Stdout: io.Discard, Stderr: &errb, IsTerminal: true, ResultsDir: results, Quiet: true}
	err := runCachebench(context.Background(), cachebenchOptions{Origin: origin.Dev, CacheDevice: cache.Dev, Kind: "lvmcache", Runtime: "1s", Repeat: 1}, m, e)
	if exitCode(err) != exitRefused || !strings.Contains(errb.String(), "About to write to "+cache.Dev) || !strings.Contains(errb.String(), `ext4 label "fast"`) {
		t.Errorf("yes, then no answer: %v (exit %d), prompts %q", err, exitCode(err), errb.String())
	}
	if reads != 1 {
		t.Errorf("the facts were read %d times for the two devices' look, want 1", reads)
	}
	if fileSum(t, origin.Image) != before || fileSum(t, cache.Image) != beforeCache {
		t.Fatal("the refused runs changed the devices' bytes")
	}

	// Changed while asked: a file system made on the origin while its
	// question waits is refused after the answers, not destroyed.
	errb.Reset()
	asked := &askedReader{answer: strings.NewReader("y\ny\n"), first: func() {
		if out, err := testenv.Run("mkfs.ext4", "-q", "-F", "-L", "planted", origin.Dev); err != nil {
			t.Errorf("mkfs.ext4: %v %s", err, out)
		}
	}}
	e = &env{Stdin: asked, Stdout: io.Discard, Stderr: &errb, IsTerminal: true, ResultsDir: results, Quiet: true}
	err = runCachebench(context.Background(), cachebenchOptions{Origin: origin.Dev, CacheDevice: cache.Dev, Kind: "lvmcache", Runtime: "1s", Repeat: 1}, liveMachine(), e)
	if exitCode(err) != exitRefused || !strings.Contains(err.Error(), "changed after the question") || !strings.Contains(err.Error(), `ext4 label "planted"`) {
		t.Errorf("changed while asked: %v (exit %d)", err, exitCode(err))
	}
	if out, _ := testenv.Run("blkid", "-o", "value", "-s", "LABEL", origin.Dev); strings.TrimSpace(out) != "planted" || fileSum(t, cache.Image) != beforeCache {
		t.Errorf("changed while asked: the origin's label is %q, the cache device changed: %v", strings.TrimSpace(out), fileSum(t, cache.Image) != beforeCache)
	}

	// Both blank: no question, the run goes on to what comes next (here
	// its own refusal of disks this small, before the build).
	if out, err := testenv.Run("wipefs", "-a", origin.Dev, cache.Dev); err != nil {
		t.Fatalf("wipefs: %v %s", err, out)
	}
	code, _, stderr = runCLI(t, append(args, "--size", "1G")...)
	if code == 0 || strings.Contains(stderr, "--yes") || strings.Contains(stderr, "refusing to write") {
		t.Errorf("blank devices without --yes: exit %d %q, want the run's own error, no question", code, stderr)
	}
}

// The SSD's fill is cachebench's one raw write: its device is claimed
// before the last look at it, so another admin's mkfs is refused while
// the fill runs, and a write that got in after the run's first check is
// seen and refused, not overwritten.
func TestPrivilegedCachebenchClaimsItsFillDevice(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4")
	ctx := context.Background()
	dev := testenv.NewLoop(t, 32<<20, testenv.LoopOptions{})
	m := liveMachine()
	e := &env{Stdout: io.Discard, Stderr: io.Discard, Quiet: true}
	deps := m.deps(e)
	deps.Refresh = func(ctx context.Context) (*hwinfo.Host, error) { return m.readFacts(ctx, "", e) }
	was, err := disk.GuardDeviceWrite(ctx, dev.Dev, deps)
	if err != nil {
		t.Fatal(err)
	}
	look := func(ctx context.Context) (*hwinfo.Host, error) { return m.settledFacts(ctx, e, e, deps) }

	// As it was shown: the write runs under the claim.
	ran := false
	_, err = claimedWrite(ctx, dev.Dev, was, look, deps, func(now *hwinfo.Host, c *bench.Claim) (*record.Record, error) {
		ran = true
		if !c.Holds(dev.Dev) {
			t.Error("the claim passed to the write does not hold the device")
		}
		if other, err := bench.ClaimDevice(hwinfo.Roots{}, dev.Dev); err == nil {
			other.Release()
			t.Error("a second claim of the device went through during the write")
		}
		if out, err := testenv.Run("mkfs.ext4", "-q", "-F", "-L", "other", dev.Dev); err == nil {
			t.Errorf("mkfs.ext4 went through during the write: %s", out)
		}
		return &record.Record{}, nil
	})
	if err != nil || !ran {
		t.Fatalf("unchanged device: ran %v, %v", ran, err)
	}

	// Written to after the first check, before the claim: seen, refused,
	// kept. (The plant is a plain write, as a tool that does not open
	// the device exclusively would make.)
	img := filepath.Join(t.TempDir(), "late.img")
	if err := os.WriteFile(img, make([]byte, 4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := testenv.Run("mkfs.ext4", "-q", "-F", "-L", "late", img); err != nil {
		t.Fatalf("mkfs.ext4: %v %s", err, out)
	}
	planted := func(ctx context.Context) (*hwinfo.Host, error) {
		b, err := os.ReadFile(img)
		if err != nil {
			return nil, err
		}
		f, err := os.OpenFile(dev.Dev, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		return look(ctx)
	}
	ran = false
	_, err = claimedWrite(ctx, dev.Dev, was, planted, deps, func(*hwinfo.Host, *bench.Claim) (*record.Record, error) {
		ran = true
		return &record.Record{}, nil
	})
	if ran || exitCode(err) != exitRefused || !strings.Contains(fmt.Sprint(err), "changed after the question") || !strings.Contains(fmt.Sprint(err), `ext4 label "late"`) {
		t.Errorf("changed before the claim: ran %v, %v (exit %d)", ran, err, exitCode(err))
	}
	if out, _ := testenv.Run("blkid", "-p", "-o", "value", "-s", "LABEL", dev.Dev); strings.TrimSpace(out) != "late" {
		t.Errorf("the late file system is gone: label %q", strings.TrimSpace(out))
	}
	if c, err := bench.ClaimDevice(hwinfo.Roots{}, dev.Dev); err != nil {
		t.Errorf("the claim outlived the refusal: %v", err)
	} else {
		c.Release()
	}
}
