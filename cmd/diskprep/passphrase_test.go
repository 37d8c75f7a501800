package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/disk"
)

// What is typed at the passphrase prompt is not echoed, and the terminal
// echoes again afterwards.
func TestReadPassphraseIsNotEchoed(t *testing.T) {
	master, slave := openPTYPair(t, 80)
	// Typed once the prompt is up, as a person does: the terminal echoes
	// what arrives, so typing ahead would be echoed before it.
	go func() {
		for {
			tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
			if err != nil || tio.Lflag&unix.ECHO == 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		master.WriteString("s3cret words\n")
	}()
	var prompt bytes.Buffer
	got, err := readPassphrase(context.Background(), slave, &prompt, "Passphrase: ")
	if err != nil || string(got) != "s3cret words" || prompt.String() != "Passphrase: \n" {
		t.Fatalf("got %q, %v; prompt %q", got, err, prompt.String())
	}
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil || tio.Lflag&unix.ECHO == 0 {
		t.Errorf("echo is not back on: %v", err)
	}
	// All the terminal showed: anything echoed comes before the marker.
	if _, err := slave.WriteString("END\n"); err != nil {
		t.Fatal(err)
	}
	shown, err := bufio.NewReader(master).ReadString('D')
	if err != nil || strings.Contains(shown, "s3cret") {
		t.Errorf("the terminal showed %q (%v)", shown, err)
	}
}

// prepare DEVICE --encrypt --passphrase: asked twice on the terminal
// before the first step; a mismatch or no terminal changes nothing; the
// passphrase is in no output and no effect.
func TestPreparePassphrase(t *testing.T) {
	const secret = "tr0ub4dor&3"
	args := []string{"diskprep", "prepare", "/dev/sdb", "--fs", "xfs", "--mount", "/vault", "--persist", "--encrypt", "--passphrase", "--yes"}
	for _, c := range []struct {
		name, typed string
		code        int
		want        string
	}{
		{"asked twice", secret + "\n" + secret + "\n", 0, "LUKS2 /dev/mapper/sdb1_crypt on /dev/sdb1, 4096-byte sectors, a passphrase: formatted, opened"},
		{"differ", secret + "\nsomething else\n", exitUsage, "the two passphrases for sdb1_crypt differ: nothing was changed"},
		{"empty", "\n", exitUsage, "the passphrase for sdb1_crypt is empty"},
		{"no terminal", "", exitUsage, "takes a passphrase, asked on a terminal, and standard input is none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, h := stackMachine(t)
			m.apply = func(ctx context.Context, p *disk.Plan, d disk.Deps) (*disk.Result, error) {
				return disk.Apply(ctx, p, d)
			}
			var stdin *os.File
			if c.typed != "" {
				master, slave := openPTYPair(t, 80)
				if _, err := master.WriteString(c.typed); err != nil {
					t.Fatal(err)
				}
				stdin = slave
			}
			var out, errb bytes.Buffer
			var code int
			if stdin != nil {
				code = runOn(context.Background(), m, args, stdin, &out, &errb)
			} else {
				code = runOn(context.Background(), m, args, strings.NewReader(""), &out, &errb)
			}
			if code != c.code || !strings.Contains(out.String()+errb.String(), c.want) {
				t.Fatalf("exit %d, want %d saying %q:\n%s%s", code, c.code, c.want, out.String(), errb.String())
			}
			all := out.String() + errb.String() + h.Transcript() + string(h.File("/etc/crypttab")) + string(h.File("/etc/fstab"))
			if strings.Contains(all, secret) {
				t.Errorf("the passphrase shows:\n%s", all)
			}
			if c.code != 0 {
				if w := h.Writes(); len(w) > 0 {
					t.Errorf("wrote: %v", w)
				}
				return
			}
			if got := strings.Count(errb.String(), "Passphrase for sdb1_crypt (LUKS2 on /dev/sdb1): "); got != 1 || !strings.Contains(errb.String(), "The same again: ") {
				t.Errorf("prompts:\n%s", errb.String())
			}
			if ct := string(h.File("/etc/crypttab")); !strings.Contains(ct, "sdb1_crypt UUID=") || !strings.Contains(ct, " none luks,nofail") {
				t.Errorf("crypttab:\n%s", ct)
			}
		})
	}
}

// Interrupted at the prompt (SIGINT, SIGHUP or SIGTERM cancel the
// command's context): the read ends at once, saying nothing was changed,
// and the terminal echoes again.
func TestReadPassphraseInterrupted(t *testing.T) {
	_, slave := openPTYPair(t, 80)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	var prompt bytes.Buffer
	got, err := readPassphrase(ctx, slave, &prompt, "Passphrase: ")
	if err == nil || got != nil || !strings.Contains(err.Error(), "at the passphrase: nothing was changed") {
		t.Fatalf("got %q, %v", got, err)
	}
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil || tio.Lflag&unix.ECHO == 0 {
		t.Errorf("echo is not back on after the interruption: %v", err)
	}
}
