package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// testApp has the shape of the real one: global flags, a command with its own
// flags and positionals, and a command with subcommands.
func testApp() *cli.App {
	app := newApp(strings.NewReader(""), io.Discard, io.Discard, &runState{})
	app.Commands = []*cli.Command{
		{Name: "bench", Flags: []cli.Flag{
			&cli.StringFlag{Name: "set"},
			&cli.StringSliceFlag{Name: "workload"},
			&cli.BoolFlag{Name: "allow-device-write"},
		}},
		{Name: "results", Flags: []cli.Flag{&cli.StringFlag{Name: "label"}}, Subcommands: []*cli.Command{
			{Name: "show", Flags: []cli.Flag{&cli.BoolFlag{Name: "latency"}}},
		}},
	}
	return app
}

func TestReorderArgs(t *testing.T) {
	cases := []struct{ in, want string }{
		{"diskprep bench /mnt/data --set quick", "diskprep bench --set quick -- /mnt/data"},
		{"diskprep bench --set quick /mnt/data", "diskprep bench --set quick -- /mnt/data"},
		{"diskprep -o json bench /mnt/data", "diskprep -o json bench -- /mnt/data"},
		{"diskprep bench /mnt/data -o json", "diskprep -o json bench -- /mnt/data"},
		{"diskprep bench /mnt/data --format=json -q --set=quick", "diskprep --format=json -q bench --set=quick -- /mnt/data"},
		{"diskprep bench /dev/loop0 --allow-device-write --workload rw=read --workload rw=write",
			"diskprep bench --allow-device-write --workload rw=read --workload rw=write -- /dev/loop0"},
		{"diskprep results show abc --latency --label x -v", "diskprep -v results --label x show --latency -- abc"},
		{"diskprep bench -- -weird-dir --set", "diskprep bench -- -weird-dir --set"},
		{"diskprep bench /x --nosuch", "diskprep bench --nosuch -- /x"},
		{"diskprep bench --help", "diskprep bench --help"},
		{"diskprep --version", "diskprep --version"},
		{"diskprep", "diskprep"},
	}
	for _, c := range cases {
		got := strings.Join(reorderArgs(testApp(), strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("reorder %q\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	completion := []string{"diskprep", "bench", "--generate-bash-completion"}
	if got := reorderArgs(testApp(), completion); !slices.Equal(got, completion) {
		t.Errorf("completion args changed: %q", got)
	}
}

// Both orders must reach the command with the same flags and positionals.
func TestFlagsEitherSideOfPositionals(t *testing.T) {
	var seen []string
	for _, args := range [][]string{
		{"diskprep", "bench", "/mnt/data", "--set", "quick", "-o", "json"},
		{"diskprep", "-o", "json", "bench", "--set", "quick", "/mnt/data"},
		{"diskprep", "--format", "json", "bench", "/mnt/data", "--set=quick"},
	} {
		app := testApp()
		app.Commands[0].Action = action(func(c *cli.Context, e *env) error {
			seen = append(seen, strings.Join([]string{c.String("set"), e.Format, c.Args().First(), c.Args().Get(1)}, "|"))
			return nil
		})
		if err := app.RunContext(context.Background(), reorderArgs(app, args)); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
	}
	for _, s := range seen {
		if s != "quick|json|/mnt/data|" {
			t.Errorf("command saw %q", s)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("ran %d times", len(seen))
	}
}

func TestRunExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"diskprep", "nosuch"}, 2, `unknown command "nosuch"`},
		{[]string{"diskprep", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"diskprep", "completion", "tcsh"}, 2, `unknown shell "tcsh"`}, // fish is known since issue 13
		{[]string{"diskprep", "completion"}, 2, "want one shell"},
		{[]string{"diskprep", "completion", "bash", "--root", "/nonexistent-root"}, 1, "--root /nonexistent-root"},
		{[]string{"diskprep", "completion", "bash", "--root", "/etc/hostname"}, 1, "not a directory"},
		{[]string{"diskprep", "completion", "bash"}, 0, ""},
		{[]string{"diskprep", "--version"}, 0, ""},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
		if code != c.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", c.args, code, c.code, errb.String())
		}
		if c.err == "" {
			if errb.Len() != 0 {
				t.Errorf("%q: unexpected stderr %q", c.args, errb.String())
			}
			continue
		}
		lines := strings.Split(strings.TrimRight(errb.String(), "\n"), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], c.err) || !strings.HasPrefix(lines[0], "diskprep: ") {
			t.Errorf("%q: stderr %q, want one line containing %q", c.args, errb.String(), c.err)
		}
	}
}
