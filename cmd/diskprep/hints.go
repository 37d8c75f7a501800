package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/internal/suggest"
)

// undefinedFlag is the start of the Go flag package's message for a flag
// nobody defines; it prints the name with one dash whatever was typed.
const undefinedFlag = "flag provided but not defined: -"

// usageHint turns cli's usage errors into ones a user can act on: an
// unknown flag is named with the dashes it needs (--mout, not -mout) and,
// when one is close, the flag meant ("did you mean --mount?"), from the
// command's own flags and the global ones. Hidden flags are never offered.
func usageHint(c *cli.Context, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, undefinedFlag)
	if !ok {
		return err
	}
	msg = undefinedFlag[:len(undefinedFlag)-1] + dashed(name)
	if f, ok := suggest.Closest(name, visibleFlagNames(c)); ok {
		msg += " (did you mean " + dashed(f) + "?)"
	}
	return errors.New(msg)
}

// visibleFlagNames lists the names of the flags valid where c is: the
// command's, then the app's global ones.
func visibleFlagNames(c *cli.Context) []string {
	var flags []cli.Flag
	if c != nil && c.Command != nil {
		flags = append(flags, c.Command.Flags...)
	}
	if c != nil && c.App != nil {
		flags = append(flags, c.App.Flags...)
	}
	var names []string
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		names = append(names, f.Names()...)
	}
	return append(names, "help")
}

func dashes(name string) string {
	if len(name) == 1 {
		return "-"
	}
	return "--"
}

func dashed(name string) string { return dashes(name) + name }

// unknownCommand is the error for a command nobody defines, suggesting the
// closest one.
func unknownCommand(name string, cmds []*cli.Command, see string) error {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	hint := suggest.Hint(name, names, "")
	// "diskprep version", "diskprep help": the flags people meant.
	if hint == "" && (name == "version" || name == "help") {
		hint = ": did you mean diskprep --" + name + "?"
	}
	return usageErr(fmt.Errorf("unknown command %q%s (see %s)", name, hint, see))
}
