package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/internal/testenv"
)

// runCLIWithin is runCLI that fails the test when the command has not
// finished after a while, instead of hanging it (a store file that blocks).
func runCLIWithin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := runCLI(t, args...)
		done <- result{code, stdout, stderr}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(30 * time.Second):
		t.Fatalf("diskprep %s still running after 30s", strings.Join(args, " "))
		return 0, "", ""
	}
}

// A store holding a named pipe, a link to /dev/zero and a sparse 200 MB
// file: results list and compare answer at once, list every good record
// and name each skipped file and why on stderr.
func TestResultsUntrustedStoreFiles(t *testing.T) {
	store := filepath.Join(t.TempDir(), "results")
	xfs, ext4 := storeQuick(t, store)
	fifo := filepath.Join(store, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(store, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(store, "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 200e6); err != nil {
		t.Fatal(err)
	}
	wantWarnings := []string{
		"skipped " + big + ": 200 MB is over the 64 MiB limit of a record",
		"skipped " + fifo + ": not a regular file (a named pipe)",
		"skipped " + zero + ": is a symbolic link, not followed in a results store",
	}
	for _, args := range [][]string{{"results", "list"}, {"compare"}, {"compare", fifo, store}} {
		code, stdout, stderr := runCLIWithin(t, append([]string{"--results", store}, args...)...)
		if code != 0 || !strings.Contains(stdout, xfs.ID[:8]) {
			t.Errorf("%v: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
		if args[0] == "results" && (!strings.Contains(stdout, xfs.ID) || !strings.Contains(stdout, ext4.ID)) {
			t.Errorf("%v lists:\n%s", args, stdout)
		}
		for _, w := range wantWarnings {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, w, stderr)
			}
		}
	}
}

// results show of a record whose file is there but damaged names the file
// and what is wrong with it, not "no such result".
func TestResultsShowDamaged(t *testing.T) {
	store := filepath.Join(t.TempDir(), "results")
	storeQuick(t, store)
	id := "20261201T000000Z-dead"
	damaged := filepath.Join(store, id+".json")
	if err := os.WriteFile(damaged, []byte(`{"schema":"diskprep/result/v1","id":"`+id+`","workloads":`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLIWithin(t, "--results", store, "results", "show", id)
	want := fmt.Sprintf("diskprep: result %q: cannot read %s: not a result record: unexpected end of JSON input\n", id, damaged)
	if code != exitFailure || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q, want %q", code, stdout, stderr, want)
	}
}

// unsavedRecords lets fscompare and cachebench go on past a record the
// store did not take, and fail at the end naming it; any other failure,
// and a partial record, pass through unchanged.
func TestUnsavedRecords(t *testing.T) {
	var u unsavedRecords
	rec := &record.Record{ID: "20261201T000000Z-aaaa"}
	saveErr := fmt.Errorf("%w in /store: write /store/x.json: %w", record.ErrNotSaved, syscall.ENOSPC)
	if got, err := u.keep(rec, saveErr); got != rec || err != nil {
		t.Errorf("unsaved record: %v %v", got, err)
	}
	other := errors.New("engine failed")
	if got, err := u.keep(nil, other); got != nil || err != other {
		t.Errorf("other failure: %v %v", got, err)
	}
	partial := &record.Record{ID: "20261201T000000Z-bbbb", Partial: true}
	if _, err := u.keep(partial, saveErr); err != saveErr {
		t.Errorf("partial record: %v", err)
	}
	err := u.err()
	if !errors.Is(err, syscall.ENOSPC) || exitCode(err) != exitFailure ||
		err.Error() != "result not saved in /store: write /store/x.json: no space left on device (not saved: 20261201T000000Z-aaaa; the report above is their only copy)" {
		t.Errorf("err %v (exit %d)", err, exitCode(err))
	}
	if (&unsavedRecords{}).err() != nil {
		t.Error("nothing unsaved is an error")
	}
}

// The store's filesystem is full when the record is saved: the report is
// printed all the same, stderr says in one line where it could not be
// written and why, the exit code is 1, and no temporary file is left.
func TestPrivilegedBenchStoreFull(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.ext4", "mount", "umount")
	loop := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	testenv.MustRun(t, "mkfs.ext4", "-F", "-q", loop.Dev)
	mnt := testenv.Mount(t, loop.Dev)
	full := t.TempDir()
	testenv.MustRun(t, "mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "diskprep-test-store", full)
	t.Cleanup(func() {
		if _, err := testenv.Run("umount", full); err != nil {
			testenv.Run("umount", "-l", full)
		}
	})
	store := filepath.Join(full, "results")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	filler, err := os.Create(filepath.Join(full, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := filler.Write(make([]byte, 1<<20)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the store's filesystem: %v", err)
	}
	filler.Close()

	code, stdout, stderr := runCLIWithin(t, "bench", mnt, "--workload", "name=rr,rw=randread,bs=4k,size=1M,runtime=1s", "--results", store)
	if code != exitFailure || !strings.Contains(stdout, "\nrr ") || !strings.Contains(stdout, "10^6 bytes/s") {
		t.Errorf("exit %d, report:\n%s\nstderr: %s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "diskprep: result not saved in "+store+": ") || !strings.Contains(last, "no space left on device") ||
		!strings.HasSuffix(last, "(the report above is this run's only copy)") || strings.Contains(stderr, "saved "+store) {
		t.Errorf("stderr:\n%s", stderr)
	}
	if left := entries(t, store); len(left) != 0 {
		t.Errorf("store holds %v", left)
	}
}

// As root, a store another user could change is refused before anything
// is measured or imported: exit 3, one line saying why and how to fix it.
// Reading such a store is allowed (its files are untrusted input anyway).
// The other user is a process of uid 65534's: it makes its own directory,
// with records in it, in a sticky world-writable directory as /tmp is.
func TestPrivilegedUnsafeStore(t *testing.T) {
	shared := testenv.SharedDir(t)
	staging := filepath.Join(t.TempDir(), "records")
	xfs, _ := storeQuick(t, staging)
	openUp(t, staging)
	testenv.AsNobody(t, shared, `mkdir user && cp -R "$1" user/results`, staging)
	userDir := filepath.Join(shared, "user")
	store := filepath.Join(userDir, "results")
	target := t.TempDir()
	fioFile := filepath.Join("..", "..", "bench", "fio", "testdata", "fio-3.33-randread.json")
	want := "diskprep: results store " + store + ": " + userDir + " is owned by uid 65534; root writes records only where no other user can change the path (make it root's and not group- or world-writable, or choose another --results): refused for safety\n"
	for _, args := range [][]string{
		{"bench", target, "--workload", "rw=read,size=1M,runtime=1s"},
		{"results", "import", fioFile},
	} {
		code, stdout, stderr := runCLIWithin(t, append([]string{"--results", store}, args...)...)
		if args[0] == "results" {
			want = strings.Replace(want, "results store "+store, "result not saved in "+store, 1)
		}
		if code != exitRefused || stdout != "" || stderr != want {
			t.Errorf("%v: exit %d, stdout %q\nstderr %q\nwant   %q", args, code, stdout, stderr, want)
		}
	}
	if left := entries(t, target); len(left) != 0 {
		t.Errorf("bench ran: target holds %v", left)
	}
	if code, _, stderr := runCLIWithin(t, "--results", store, "results", "list"); code != 0 {
		t.Errorf("results list of another user's store: exit %d %s", code, stderr)
	}
	if code, _, stderr := runCLIWithin(t, "--results", store, "results", "rm", xfs.ID); code != exitRefused || !strings.Contains(stderr, "owned by uid 65534") {
		t.Errorf("results rm in another user's store: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(store, xfs.ID+".json")); err != nil {
		t.Errorf("the refused rm removed the record: %v", err)
	}
}

// As root, --results naming another user's link (uid 65534's, in a sticky
// world-writable directory as /tmp is) into a directory only root may
// enter is refused, by the built binary, before anything is measured or
// imported: exit 3, one line naming the link and its owner, and nothing
// written behind it; with the kernel's fs.protected_symlinks off (the
// check alone) and on (the kernel refuses root the link too: the answer
// must be the same refusal, not its EACCES).
func TestPrivilegedStoreLinkOtherUser(t *testing.T) {
	shared := testenv.SharedDir(t)
	bin := faultBuild(t)
	rootOnly := filepath.Join(t.TempDir(), "root-only")
	if err := os.Mkdir(rootOnly, 0o700); err != nil {
		t.Fatal(err)
	}
	testenv.AsNobody(t, shared, `ln -s "$1" results && ln -s "$1/store" store`, rootOnly)
	target, tmp := t.TempDir(), t.TempDir()
	fioFile, err := filepath.Abs(filepath.Join("..", "..", "bench", "fio", "testdata", "fio-3.33-randread.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []badCase
	for _, link := range []string{"results", "store"} { // the directory, and a store yet to be made in it
		dir := filepath.Join(shared, link)
		want := dir + " is a symbolic link owned by uid 65534; root writes records only where no other user can change the path"
		cases = append(cases,
			badCase{"bench " + link, []string{"--results", dir, "bench", target, "--workload", "rw=read,size=1M,runtime=1s"}, exitRefused, "results store " + dir + ": " + want},
			badCase{"import " + link, []string{"--results", dir, "results", "import", fioFile}, exitRefused, "result not saved in " + dir + ": " + want},
		)
	}
	testenv.ProtectedSymlinks(t, func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := takeSnapshot(t, shared)
				code, stdout, stderr := runBuilt(t, bin, tmp, c.args...)
				checkOutcome(t, c, code, stdout, stderr)
				if d := before.diff(takeSnapshot(t, shared)); d != "" {
					t.Errorf("changed:\n%s", d)
				}
				for _, d := range []string{rootOnly, target, tmp} {
					if left := entries(t, d); len(left) != 0 {
						t.Errorf("%s holds %v", d, left)
					}
				}
			})
		}
	})
}
