package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/internal/testenv"
)

// fakeSysBlock makes a /sys/class/block with a disk, its partition, an
// unused loop device (size 0) and an NVMe disk.
func fakeSysBlock(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, files := range map[string]map[string]string{
		"sdb":     {"size": "2048\n"},
		"sdb1":    {"size": "1024\n", "partition": "1\n"},
		"loop7":   {"size": "0\n"},
		"nvme0n1": {"size": "4096\n"},
	} {
		os.MkdirAll(filepath.Join(dir, name), 0o755)
		for f, v := range files {
			os.WriteFile(filepath.Join(dir, name, f), []byte(v), 0o644)
		}
	}
	return dir
}

// Issue 13 item 8: values complete to what diskprep really takes, and a
// hidden flag is never offered.
func TestCompleteValues(t *testing.T) {
	app := newApp(nil, &bytes.Buffer{}, &bytes.Buffer{}, &runState{})
	prep := findCommand(app.Commands, "prepare")
	prep.Flags = append(prep.Flags, &cli.StringFlag{Name: "fstab", Hidden: true}) // as the crashtest build has
	blk := fakeSysBlock(t)
	cases := []struct {
		words []string
		want  []string
	}{
		{[]string{"bench", "/mnt", "--set", ""}, workload.SetNames()},
		{[]string{"fscompare", "--set", "q"}, []string{"quick"}},
		{[]string{"compare", "--by", ""}, compare.ByNames},
		{[]string{"compare", "--by=d"}, []string{"--by=device"}},
		{[]string{"prepare", "/dev/sdb", "--fs", ""}, []string{"xfs", "ext4"}},
		{[]string{"inventory", "-o", ""}, []string{"table", "json", "markdown"}},
		{[]string{"-o", ""}, []string{"table", "json", "markdown"}},
		{[]string{"compare", "-o", "h"}, []string{"html"}},
		{[]string{"prepare", ""}, []string{"/dev/nvme0n1", "/dev/sdb"}}, // whole disks with a size
		{[]string{"bench", "--set", "quick", "/dev/s"}, []string{"/dev/sdb", "/dev/sdb1", ":files"}},
		{[]string{"prepare", "--image", ""}, []string{":files"}},
		{[]string{"prepare", "--mount", ""}, []string{":dirs"}},
		{[]string{"results", ""}, []string{"list", "show", "rm", "import", "export"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{[]string{"prepare", "--pe"}, []string{"--persist"}},
		{[]string{"prepare", "--fst"}, nil}, // hidden
		{[]string{"inv"}, []string{"inventory"}},
		{[]string{"__"}, nil}, // the completion command itself is hidden
	}
	for _, c := range cases {
		got := complete(app, c.words, blk)
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("complete %q = %q, want %q", c.words, got, want)
		}
	}
	flags := complete(app, []string{"prepare", "--"}, blk)
	for _, f := range flags {
		if f == "--fstab" || f == "--version" {
			t.Errorf("prepare offers %s: %q", f, flags)
		}
	}
	for _, f := range []string{"--mount", "--persist", "--format", "--help"} {
		n := 0
		for _, g := range flags {
			if g == f {
				n++
			}
		}
		if n != 1 {
			t.Errorf("prepare flags %q: want %s once", flags, f)
		}
	}
}

// The scripts themselves, run in their shells against the built binary:
// what a person gets on pressing Tab.
func TestCompletionScripts(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		testenv.SkipOrFail(t, "no go tool to build the binary: %v", err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "diskprep"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	path := dir + string(os.PathListSeparator) + os.Getenv("PATH")
	shell := func(name string, script string) string {
		t.Helper()
		if _, err := exec.LookPath(name); err != nil {
			testenv.SkipOrFail(t, "%s not installed (scripts/test.sh installs it): %v", name, err)
		}
		cmd := exec.Command(name, "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+path, "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return string(out)
	}
	t.Run("bash", func(t *testing.T) {
		out := shell("bash", `source <(diskprep completion bash)
COMP_WORDS=(diskprep bench /mnt/data --set ""); COMP_CWORD=4; _diskprep; printf '%s\n' "${COMPREPLY[@]}"; echo ==
COMP_WORDS=(diskprep compare --by ""); COMP_CWORD=3; _diskprep; printf '%s\n' "${COMPREPLY[@]}"; echo ==
COMP_WORDS=(diskprep prepare --mo); COMP_CWORD=2; _diskprep; printf '%s\n' "${COMPREPLY[@]}"`)
		parts := strings.Split(out, "==\n")
		if len(parts) != 3 {
			t.Fatalf("bash output:\n%s", out)
		}
		if got := strings.Fields(parts[0]); !slices.Equal(got, workload.SetNames()) {
			t.Errorf("--set completes to %q, want %q", got, workload.SetNames())
		}
		if got := strings.Fields(parts[1]); !slices.Equal(got, compare.ByNames) {
			t.Errorf("--by completes to %q", got)
		}
		if got := strings.Fields(parts[2]); !slices.Equal(got, []string{"--mount", "--mount-opt", "--mount-over"}) {
			t.Errorf("--mo completes to %q", got)
		}
	})
	t.Run("zsh", func(t *testing.T) {
		// The script parses, and zsh's completion system loads it.
		out := shell("zsh", `autoload -Uz compinit && compinit -u -d "$HOME/.zcompdump"
source <(diskprep completion zsh) && whence -w _diskprep`)
		if !strings.Contains(out, "_diskprep: function") {
			t.Errorf("zsh: %s", out)
		}
	})
	t.Run("fish", func(t *testing.T) {
		out := shell("fish", `diskprep completion fish | source
complete -C 'diskprep bench /mnt --set '
echo ==
complete -C 'diskprep compare --by '
echo ==
complete -C 'diskprep prepare --mo'`)
		parts := strings.Split(out, "==\n")
		if len(parts) != 3 {
			t.Fatalf("fish output:\n%s", out)
		}
		if got := strings.Fields(parts[0]); !slices.Equal(got, workload.SetNames()) {
			t.Errorf("fish --set completes to %q", got)
		}
		want := slices.Sorted(slices.Values(compare.ByNames)) // fish sorts
		if got := strings.Fields(parts[1]); !slices.Equal(got, want) {
			t.Errorf("fish --by completes to %q, want %q", got, want)
		}
		if got := strings.Fields(parts[2]); !slices.Equal(got, []string{"--mount", "--mount-opt", "--mount-over"}) {
			t.Errorf("fish --mo completes to %q", got)
		}
	})
}
