package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Issue 13 item 5: a typo is answered with the name meant, printed as it
// must be typed (two dashes for a long flag), for flags, commands, sets,
// formats and --by values.
func TestTypoSuggestions(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"prepare", "/dev/sdb", "--mout", "/x"}, "flag provided but not defined: --mout (did you mean --mount?)"},
		{[]string{"prepare", "--dryrun", "/dev/sdb"}, "--dryrun (did you mean --dry-run?)"},
		{[]string{"bench", dir, "--st", "quick"}, "--st (did you mean --set?)"},
		{[]string{"inventory", "--formt", "json"}, "--formt (did you mean --format?)"}, // a global flag
		{[]string{"inventry"}, `unknown command "inventry": did you mean inventory?`},
		{[]string{"fscompar"}, `unknown command "fscompar": did you mean fscompare?`},
		{[]string{"results", "lsit"}, `unknown subcommand "lsit": did you mean list?`},
		{[]string{"bench", dir, "--set", "quik"}, `unknown workload set "quik": did you mean quick?`},
		{[]string{"inventory", "-o", "jsno"}, `unknown output format "jsno" for this command: did you mean json?`},
		{[]string{"compare", "--by", "lable"}, `unknown --by "lable": did you mean label?`},
		{[]string{"completion", "fihs"}, `unknown shell "fihs": did you mean fish?`},
	}
	for _, c := range cases {
		code, _, errOut := runDiskprep(t, "", c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line with %q", c.args, code, errOut, c.want)
		}
	}
	// Nothing close: no guess.
	code, _, errOut := runDiskprep(t, "", "prepare", "--frobnicate")
	if code != exitUsage || strings.Contains(errOut, "did you mean") || !strings.Contains(errOut, "--frobnicate") {
		t.Errorf("--frobnicate: exit %d, %q", code, errOut)
	}
}

// A hidden flag (the crashtest build's --fstab) is never offered.
func TestTypoNeverSuggestsHiddenFlags(t *testing.T) {
	cmd := &cli.Command{Name: "prepare", Flags: []cli.Flag{
		&cli.StringFlag{Name: "fstab", Hidden: true},
		&cli.StringFlag{Name: "fs"},
	}}
	c := cli.NewContext(&cli.App{}, nil, nil)
	c.Command = cmd
	err := usageHint(c, errors.New("flag provided but not defined: -fstb"))
	if strings.Contains(err.Error(), "--fstab") {
		t.Errorf("hidden flag offered: %v", err)
	}
	if err := usageHint(c, errors.New("flag provided but not defined: -fss")); !strings.Contains(err.Error(), "did you mean --fs?") {
		t.Errorf("visible flag not offered: %v", err)
	}
}
