package fstab

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/internal/atomicfile"
)

// crashChildEnv names the fstab the re-executed test binary edits; its
// presence turns TestCrashChild from a skip into the victim process.
const crashChildEnv = "DISKPREP_FSTAB_CRASH_CHILD"

// crashOpEnv says which edit the child makes: "add" or "remove".
const crashOpEnv = "DISKPREP_FSTAB_CRASH_OP"

var crashEntry = Entry{Spec: "UUID=0f0e0d0c-0b0a-0908-0706-050403020100", File: "/data", VFSType: "xfs", Options: "noatime"}

// TestCrashChild is the process TestCrashSafety kills. It says "ready" just
// before Add, then sleeps a random while at each step boundary so that kills
// land between steps as well as inside the writes.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("helper process for TestCrashSafety")
	}
	edit := func(path string, change Change) error {
		return EditSteps(path, change, func(string) { time.Sleep(time.Duration(rand.IntN(400)) * time.Microsecond) })
	}
	fmt.Println("ready")
	var err error
	if os.Getenv(crashOpEnv) == "remove" {
		_, err = RemoveWith(edit, path, func(e Entry) bool { return e.File == crashEntry.File })
	} else {
		_, err = AddWith(edit, path, crashEntry, day)
	}
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("done")
}

// TestCrashSafety SIGKILLs Add and Remove at random points and checks that
// fstab is always exactly the old or the new content, the backup (when
// present) is the old content, and a rerun converges to the new content.
func TestCrashSafety(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("inside the helper process")
	}
	base, err := os.ReadFile("testdata/centos7.fstab")
	if err != nil {
		t.Fatal(err)
	}
	// The file with diskprep's line, made by the same code path uninterrupted.
	ref := filepath.Join(t.TempDir(), "fstab")
	os.WriteFile(ref, base, 0o644)
	if _, err := Add(ref, crashEntry, day); err != nil {
		t.Fatal(err)
	}
	withEntry, _ := os.ReadFile(ref)
	t.Run("add", func(t *testing.T) { crashLoop(t, "add", base, withEntry) })
	t.Run("remove", func(t *testing.T) { crashLoop(t, "remove", withEntry, base) })
}

func crashLoop(t *testing.T, op string, oldData, newData []byte) {
	t.Setenv(crashOpEnv, op)
	rerun := func(path string) error {
		if op == "remove" {
			_, err := Remove(path, func(e Entry) bool { return e.File == crashEntry.File })
			return err
		}
		_, err := Add(path, crashEntry, day)
		return err
	}

	// Calibrate: how long an uninterrupted child takes from "ready" to exit,
	// so the random kill delays cover the whole edit on this machine's disk.
	window := runChild(t, oldData, -1)
	t.Logf("uninterrupted edit took %v", window)
	window += window / 5

	iterations := 50
	if testing.Short() {
		iterations = 10
	}
	var sawOld, sawNew, stale int
	for i := range iterations {
		dir := t.TempDir()
		path := filepath.Join(dir, "fstab")
		runChildIn(t, path, oldData, time.Duration(rand.Int64N(int64(window))))

		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("iteration %d: fstab unreadable after kill: %v", i, err)
		}
		switch {
		case bytes.Equal(got, oldData):
			sawOld++
		case bytes.Equal(got, newData):
			sawNew++
		default:
			t.Fatalf("iteration %d: fstab is neither old nor new:\n%s", i, got)
		}
		lines, err := Parse(got)
		if err != nil {
			t.Fatalf("iteration %d: %v", i, err)
		}
		if n := countFile(lines, "/data"); n > 1 {
			t.Fatalf("iteration %d: /data appears %d times", i, n)
		}
		if bak, err := os.ReadFile(path + BackupSuffix); err == nil && !bytes.Equal(bak, oldData) {
			t.Fatalf("iteration %d: backup is not the old content:\n%s", i, bak)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix+"*")); len(left) > 0 {
			stale++
		}

		// Rerun converges and clears a killed run's temporaries.
		if err := rerun(path); err != nil {
			t.Fatalf("iteration %d: rerun: %v", i, err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, newData) {
			t.Fatalf("iteration %d: rerun gave\n%s", i, got)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix+"*")); len(left) > 0 {
			t.Fatalf("iteration %d: temporaries left after rerun: %v", i, left)
		}
	}
	t.Logf("%d kills: fstab old %d times, new %d times; %d left temporaries (removed by the rerun)",
		iterations, sawOld, sawNew, stale)
}

// runChild runs the victim on a fresh copy of old data and returns how long
// it ran after saying "ready"; with kill >= 0 it is SIGKILLed that long
// after "ready".
func runChild(t *testing.T, oldData []byte, kill time.Duration) time.Duration {
	return runChildIn(t, filepath.Join(t.TempDir(), "fstab"), oldData, kill)
}

func runChildIn(t *testing.T, path string, oldData []byte, kill time.Duration) time.Duration {
	t.Helper()
	if err := os.WriteFile(path, oldData, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path) // crashOpEnv comes via t.Setenv
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	line, _ := r.ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q", line)
	}
	start := time.Now()
	if kill >= 0 {
		time.Sleep(kill)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		return time.Since(start)
	}
	rest, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil || !strings.Contains(string(rest), "done") {
		t.Fatalf("uninterrupted child: %v: %s", err, rest)
	}
	return time.Since(start)
}

func countFile(lines []Line, file string) int {
	n := 0
	for _, l := range lines {
		if l.Entry != nil && l.Entry.File == file {
			n++
		}
	}
	return n
}
