package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// reorderArgs lets people type flags wherever they like, as DESIGN.md
// promises: `diskprep bench /mnt/data --set quick -o json` becomes
// `diskprep -o json bench --set quick /mnt/data`, which is the only order
// urfave/cli/v2 parses (it stops at the first positional argument, and takes
// global flags only before the command name).
//
// Each flag goes to the level that defines it: the innermost command first,
// then its parents, then the app. A flag nobody defines stays with the
// innermost command so cli reports it as unknown. Everything after "--" is
// positional and keeps its order.
func reorderArgs(app *cli.App, args []string) []string {
	// A completion request is the line as typed: its words stay as they are.
	if len(args) < 2 || slices.Contains(args, "--generate-bash-completion") || args[1] == "__complete" {
		return args
	}
	type level struct {
		flags []cli.Flag
		subs  []*cli.Command
		name  string
		args  []string // flags for this level, in typed order
	}
	levels := []*level{{flags: app.Flags, subs: app.Commands}}
	var positionals []string
	// A flag that wants a value but ends the line: at its level with
	// nothing after it, so cli says "flag needs an argument" instead of
	// taking the command name or "--" as the value.
	valueless := -1
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			positionals = append(positionals, rest[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			target := levels[len(levels)-1]
			var flag cli.Flag
			for j := len(levels) - 1; j >= 0; j-- {
				if f := findFlag(levels[j].flags, name, j == 0); f != nil {
					target, flag = levels[j], f
					break
				}
			}
			target.args = append(target.args, a)
			if flag != nil && !hasValue && takesValue(flag) {
				if i+1 == len(rest) {
					valueless = slices.Index(levels, target)
					break
				}
				i++
				target.args = append(target.args, rest[i])
			}
			continue
		}
		cur := levels[len(levels)-1]
		if len(positionals) == 0 {
			if cmd := findCommand(cur.subs, a); cmd != nil {
				flags := cmd.Flags
				if !cmd.HideHelp {
					flags = append(slices.Clip(flags), cli.HelpFlag)
				}
				levels = append(levels, &level{flags: flags, subs: cmd.Subcommands, name: a})
				continue
			}
		}
		positionals = append(positionals, a)
	}
	out := []string{args[0]}
	for i, l := range levels {
		if i > 0 {
			out = append(out, l.name)
		}
		out = append(out, l.args...)
		if i == valueless {
			return out
		}
	}
	if len(positionals) > 0 {
		// "--" keeps a positional that starts with "-" from being read as a flag.
		out = append(out, "--")
		out = append(out, positionals...)
	}
	return out
}

func findFlag(flags []cli.Flag, name string, app bool) cli.Flag {
	switch {
	case name == "help" || name == "h":
		return cli.HelpFlag
	case name == "version" && app:
		return cli.VersionFlag
	}
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.TakesValue()
	}
	return false
}
