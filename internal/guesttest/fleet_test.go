package guesttest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A fleet is guests with systemd and sshd, each on its own forwarded
// loopback port, that this machine reaches over SSH with a key made for
// the test, as a control node reaches real hosts.

// fleetGuestScript is what each fleet guest runs: take its name and, when
// asked, a clock set off by CLOCK_SHIFT seconds; let in the test's key;
// say it is ready; then wait until the test says stop. With
// POWEROFF_IN_BENCH it powers itself off two seconds into its first
// benchmark, as a host that dies mid-run.
const fleetGuestScript = `set -u
. /share/params
hostname "$NAME"
echo "$NAME" >/etc/hostname
if [ "${CLOCK_SHIFT:-0}" != 0 ]; then
	date -s "@$(awk -v s="$CLOCK_SHIFT" -v t="$(date +%s.%N)" 'BEGIN { printf "%.3f", t + s }')" >/dev/null
fi
mkdir -p -m 700 /root/.ssh
cp /share/key.pub /root/.ssh/authorized_keys
chmod 600 /root/.ssh/authorized_keys
: >/share/ready
while [ ! -e /share/stop ]; do
	# The first word diskprep: this script's own command line holds the
	# pattern too.
	if [ -e /share/poweroff-in-bench ] && pgrep -f '^[^ ]*diskprep .*bench' >/dev/null; then
		sleep 2
		echo "powering off in the benchmark" >/dev/console
		echo o >/proc/sysrq-trigger
	fi
	sleep 0.5
done
echo stopped
`

// fleetGuest is one host of a fleet.
type fleetGuest struct {
	Name       string
	Disks      []string
	ClockShift int // seconds the guest's clock is set ahead of this machine's

	port   int
	share  string
	state  string
	cancel context.CancelFunc
	done   chan Result
}

// fleet is a running set of fleet guests and the key that logs in to them.
type fleet struct {
	t      *testing.T
	dir    string
	key    string
	guests []*fleetGuest
}

// freePort is a loopback TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startFleet boots every guest at once and returns when each answers over
// SSH; the guests are stopped and their images removed when the test ends.
func startFleet(t *testing.T, guests ...*fleetGuest) *fleet {
	t.Helper()
	Require(t)
	for _, tool := range []string{"ssh", "ssh-keygen", "ansible-playbook"} {
		if _, err := exec.LookPath(tool); err != nil {
			SkipOrFail(t, "fleet test: no %s (Debian: openssh-client, ansible-core)", tool)
		}
	}
	f := &fleet{t: t, dir: t.TempDir(), guests: guests}
	f.key = filepath.Join(f.dir, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "diskprep-fleet-test", "-f", f.key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(f.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range guests {
		g.share = filepath.Join(f.dir, g.Name, "share")
		g.state = filepath.Join(f.dir, g.Name, "state")
		for _, d := range []string{g.share, g.state} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		must(t, os.WriteFile(filepath.Join(g.share, "key.pub"), pub, 0o644))
		must(t, os.WriteFile(filepath.Join(g.share, "params"), fmt.Appendf(nil, "NAME=%s\nCLOCK_SHIFT=%d\n", g.Name, g.ClockShift), 0o644))
		f.boot(g)
	}
	t.Cleanup(f.stop)
	for _, g := range guests {
		f.waitSSH(g)
	}
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// boot starts g's guest (again, after a power-off: its disks and root are
// kept in its state directory).
func (f *fleet) boot(g *fleetGuest) {
	g.port = freePort(f.t)
	os.Remove(filepath.Join(g.share, "ready"))
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel, g.done = cancel, make(chan Result, 1)
	opt := Options{Disks: g.Disks, Systemd: true, SSH: g.port, Share: g.share, State: g.state, Timeout: 40 * time.Minute}
	go func() {
		r, err := Exec(ctx, opt, "sh", "-c", fleetGuestScript)
		if err != nil {
			r.Stderr += "\n" + err.Error()
			r.ExitCode = -1
		}
		g.done <- r
	}()
}

// waitSSH waits until g answers over SSH, or fails with its console.
func (f *fleet) waitSSH(g *fleetGuest) {
	f.t.Helper()
	deadline := time.Now().Add(stretched(8 * time.Minute))
	for {
		if _, err := os.Stat(filepath.Join(g.share, "ready")); err == nil {
			if _, err := f.ssh(g, "true"); err == nil {
				return
			}
		}
		select {
		case r := <-g.done:
			g.done <- r
			f.t.Fatalf("fleet guest %s ended before it answered over SSH (exit %d):\n%s\n%s", g.Name, r.ExitCode, lastLines(r.Stderr, 30), r.Stdout)
		case <-time.After(2 * time.Second):
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("fleet guest %s did not answer over SSH on 127.0.0.1:%d", g.Name, g.port)
		}
	}
}

// stretched is d made longer by the machine's load, as budgetFor does.
func stretched(d time.Duration) time.Duration {
	return budgetFor(d, loadAverage(), runtime.NumCPU(), 0).guest
}

// sshArgs are the ssh options that reach g with the fleet's key and
// nothing of this machine's ssh configuration or known hosts.
func (f *fleet) sshArgs(g *fleetGuest) []string {
	return []string{"-F", "/dev/null", "-i", f.key, "-p", strconv.Itoa(g.port),
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "LogLevel=ERROR", "-o", "ConnectTimeout=20"}
}

// ssh runs a shell command on g as root and returns its stdout.
func (f *fleet) ssh(g *fleetGuest, command string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stretched(2*time.Minute))
	defer cancel()
	args := append(f.sshArgs(g), "root@127.0.0.1", command)
	var out, errb strings.Builder
	cmd := exec.CommandContext(ctx, "ssh", args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("ssh %s %q: %v: %s", g.Name, command, err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// inventoryLine is g's line in an Ansible inventory: this machine's
// loopback address and g's port, the fleet's key, no local connection.
func (f *fleet) inventoryLine(g *fleetGuest) string {
	return fmt.Sprintf("%s ansible_host=127.0.0.1 ansible_port=%d ansible_user=root ansible_ssh_private_key_file=%s", g.Name, g.port, f.key)
}

// waitDown waits for g's guest to end after it powered itself off.
func (f *fleet) waitDown(g *fleetGuest, within time.Duration) Result {
	f.t.Helper()
	select {
	case r := <-g.done:
		g.done <- r
		return r
	case <-time.After(within):
		f.t.Fatalf("fleet guest %s still running after %v", g.Name, within)
	}
	return Result{}
}

// stop asks every guest still running to stop, then stops the ones that
// do not within a minute; every guest.sh has ended when it returns.
func (f *fleet) stop() {
	var wg sync.WaitGroup
	for _, g := range f.guests {
		if g.done == nil {
			continue
		}
		os.WriteFile(filepath.Join(g.share, "stop"), nil, 0o644)
		wg.Add(1)
		go func(g *fleetGuest) {
			defer wg.Done()
			select {
			case r := <-g.done:
				g.done <- r
			case <-time.After(stretched(time.Minute)):
				g.cancel()
				r := <-g.done
				g.done <- r
			}
			g.cancel()
		}(g)
	}
	wg.Wait()
}

// repoRoot is the module root (where scripts/ is).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, os.WriteFile(path, []byte(content), 0o644))
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// clockOffset measures g's clock less this machine's, apart from the
// playbook: timestamp round trips over one multiplexed ssh connection,
// the shortest kept, its midpoint taken. The guest's clock is the
// RTC's at boot, off by up to a second, so a test holds the playbook's
// figure to this one rather than to the shift it asked for.
func (f *fleet) clockOffset(g *fleetGuest) (offset, rtt time.Duration) {
	f.t.Helper()
	sock := filepath.Join(f.dir, g.Name+".ssh")
	base := append(f.sshArgs(g), "-o", "ControlPath="+sock)
	master := exec.Command("ssh", append(append([]string{}, base...), "-o", "ControlMaster=yes", "-N", "root@127.0.0.1")...)
	if err := master.Start(); err != nil {
		f.t.Fatal(err)
	}
	defer func() {
		exec.Command("ssh", append(append([]string{}, base...), "-O", "exit", "root@127.0.0.1")...).Run()
		master.Process.Kill()
		master.Wait()
	}()
	rtt = time.Hour
	for i := 0; i < 40 && (i < 12 || rtt == time.Hour); i++ {
		t0 := time.Now()
		out, err := exec.Command("ssh", append(append([]string{}, base...), "root@127.0.0.1", "date +%s.%N")...).Output()
		t1 := time.Now()
		if err != nil {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		sec, frac, _ := strings.Cut(strings.TrimSpace(string(out)), ".")
		s, err1 := strconv.ParseInt(sec, 10, 64)
		ns, err2 := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if err1 != nil || err2 != nil {
			f.t.Fatalf("%s: date printed %q", g.Name, out)
		}
		host := time.Unix(s, ns)
		if d := t1.Sub(t0); d < rtt {
			rtt, offset = d, host.Sub(t0.Add(d/2))
		}
	}
	if rtt == time.Hour {
		f.t.Fatalf("%s: no timestamp round trip over ssh", g.Name)
	}
	return offset, rtt
}
