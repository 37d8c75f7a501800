package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/internal/suggest"
)

// shells are the shells completion writes scripts for.
var shells = []string{"bash", "zsh", "fish"}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Completion asks diskprep itself for the commands, flags and values, so
it always matches the installed version: workload sets, output formats, --by
values, filesystems and block devices complete to their real values, files
where a flag wants a file.

Examples:
  source <(diskprep completion bash)
  diskprep completion bash > /etc/bash_completion.d/diskprep
  diskprep completion zsh > "${fpath[1]}/_diskprep"
  diskprep completion fish > ~/.config/fish/completions/diskprep.fish`,
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() != 1 {
				return usageErr(fmt.Errorf("completion: want one shell, bash, zsh or fish"))
			}
			return writeCompletion(e.Stdout, c.Args().First())
		}),
	}
}

// completeCommand is what the scripts call: `diskprep __complete WORD...`
// with the words typed after "diskprep", the last being the one under the
// cursor (maybe empty). It prints one candidate a line; a last line
// ":files" or ":dirs" asks the shell to add file or directory names.
func completeCommand() *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		SkipFlagParsing: true,
		HideHelp:        true,
		Action: func(c *cli.Context) error {
			words := c.Args().Slice()
			for _, s := range complete(c.App, words, sysBlock) {
				fmt.Fprintln(c.App.Writer, s)
			}
			return nil
		},
	}
}

func writeCompletion(w io.Writer, shell string) error {
	var script string
	switch shell {
	case "bash":
		script = bashCompletion
	case "zsh":
		script = zshCompletion
	case "fish":
		script = fishCompletion
	default:
		return usageErr(fmt.Errorf("completion: unknown shell %q%s (valid: %s)", shell, suggest.Hint(shell, shells, ""), strings.Join(shells, ", ")))
	}
	_, err := io.WriteString(w, script)
	return err
}

// sysBlock is where block devices are listed (tests pass complete a fixture).
const sysBlock = "/sys/class/block"

// commandFormats are the -o values each command takes.
func commandFormats(path []string) []string {
	switch strings.Join(path, " ") {
	case "inventory":
		return report.InventoryFormats
	case "prepare", "release":
		return []string{"table", "json"}
	case "bench":
		return []string{"table", "json", "markdown"}
	case "compare", "fscompare":
		return report.Formats
	case "results export":
		return exportFormats
	}
	if len(path) > 0 && path[0] == "results" {
		return report.RecordFormats
	}
	return []string{"table", "json", "markdown"}
}

// complete answers one completion request; words are those after
// "diskprep", the last one being completed.
func complete(app *cli.App, words []string, blockDir string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	cmds, flags := app.Commands, slices.Clone(app.Flags)
	var path []string
	var cmd *cli.Command
	positionals := 0
	for i := 0; i < len(before); i++ {
		w := before[i]
		if strings.HasPrefix(w, "-") && len(w) > 1 {
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if f := findFlag(flags, name, cmd == nil); f != nil && !hasValue && takesValue(f) {
				i++ // its value
			}
			continue
		}
		if positionals == 0 {
			if c := findCommand(cmds, w); c != nil && !c.Hidden {
				cmd, cmds, path = c, c.Subcommands, append(path, w)
				flags = append(slices.Clone(c.Flags), app.Flags...)
				continue
			}
		}
		positionals++
	}
	// The value of the flag just typed.
	if n := len(before); n > 0 && strings.HasPrefix(before[n-1], "-") && !strings.Contains(before[n-1], "=") {
		if f := findFlag(flags, strings.TrimLeft(before[n-1], "-"), cmd == nil); f != nil && takesValue(f) {
			return filter(flagValues(f.Names()[0], path), cur)
		}
	}
	if name, val, ok := strings.Cut(cur, "="); ok && strings.HasPrefix(name, "--") {
		if f := findFlag(flags, name[2:], cmd == nil); f != nil && takesValue(f) {
			var out []string
			for _, v := range filter(flagValues(f.Names()[0], path), val) {
				if !strings.HasPrefix(v, ":") {
					v = name + "=" + v
				}
				out = append(out, v)
			}
			return out
		}
	}
	if strings.HasPrefix(cur, "-") {
		var out []string
		for _, f := range flags {
			if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
				continue
			}
			for _, n := range f.Names() {
				// --version belongs to the app alone; --help comes once.
				if len(n) > 1 && n != "help" && (n != "version" || cmd == nil) && !slices.Contains(out, "--"+n) {
					out = append(out, "--"+n)
				}
			}
		}
		if cmd == nil || !cmd.HideHelp {
			out = append(out, "--help")
		}
		return filter(out, cur)
	}
	if positionals == 0 && len(cmds) > 0 {
		var out []string
		for _, c := range cmds {
			if !c.Hidden {
				out = append(out, c.Name)
			}
		}
		return filter(out, cur)
	}
	return filter(positionalValues(path, positionals, blockDir), cur)
}

// flagValues are the values a flag takes; ":files" and ":dirs" ask the
// shell for names on disk.
func flagValues(flag string, path []string) []string {
	cmd := strings.Join(path, " ")
	switch flag {
	case "set":
		return workload.SetNames()
	case "format":
		if cmd == "results export" {
			return exportFormats
		}
		return commandFormats(path)
	case "by":
		return compare.ByNames
	case "fs":
		if cmd == "fscompare" {
			return []string{"xfs,ext4", "ext4,xfs", "xfs", "ext4"}
		}
		return []string{"xfs", "ext4"}
	case "engine":
		return []string{"auto", "sync", "io_uring"}
	case "sector-size":
		return []string{"512", "4096"}
	case "repeat":
		if cmd == "bench" {
			return []string{"auto", "3", "5", "10"}
		}
		return []string{"3", "5", "10"}
	case "image", "plan", "output", "fstab":
		return []string{":files"}
	case "mount", "root", "results":
		return []string{":dirs"}
	}
	return nil
}

// positionalValues are what the n-th argument of a command may be.
func positionalValues(path []string, n int, blockDir string) []string {
	switch strings.Join(path, " ") {
	case "completion":
		if n == 0 {
			return shells
		}
	case "prepare", "fscompare":
		if n == 0 {
			return blockDevices(blockDir, false)
		}
	case "bench":
		return append(blockDevices(blockDir, true), ":files")
	case "release":
		return append(blockDevices(blockDir, true), ":files")
	case "compare", "results import":
		return []string{":files"}
	}
	return nil
}

// blockDevices lists /dev names of the block devices the kernel has, the
// whole disks only unless parts; devices of size 0 (an unused loop device,
// an empty drive) are left out.
func blockDevices(dir string, parts bool) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if size, err := os.ReadFile(filepath.Join(p, "size")); err != nil || strings.TrimSpace(string(size)) == "0" {
			continue
		}
		if _, err := os.Stat(filepath.Join(p, "partition")); err == nil && !parts {
			continue
		}
		out = append(out, "/dev/"+e.Name())
	}
	return out
}

func filter(cands []string, prefix string) []string {
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(c, ":") || strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// The scripts hand the words typed so far to `diskprep __complete`; a last
// line ":files" or ":dirs" adds names from disk.
const bashCompletion = `# bash completion for diskprep
_diskprep() {
    local cur line files=""
    cur="${COMP_WORDS[COMP_CWORD]}"
    COMPREPLY=()
    while IFS= read -r line; do
        case "$line" in
            :files) files=f ;;
            :dirs) files=d ;;
            *) COMPREPLY+=("$line") ;;
        esac
    done < <("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
    if [ -n "$files" ]; then
        local f
        while IFS= read -r f; do COMPREPLY+=("$f"); done < <(compgen -"$files" -- "$cur")
        compopt -o filenames 2>/dev/null
    fi
}
complete -F _diskprep diskprep
`

const zshCompletion = `#compdef diskprep
_diskprep() {
    local -a cands
    local line files=""
    for line in "${(@f)$(${words[1]} __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}"; do
        case "$line" in
            :files) files=f ;;
            :dirs) files=d ;;
            "") ;;
            *) cands+=("$line") ;;
        esac
    done
    (( ${#cands} )) && compadd -Q -- "${cands[@]}"
    case "$files" in
        f) _files ;;
        d) _files -/ ;;
    esac
}
compdef _diskprep diskprep
`

const fishCompletion = `# fish completion for diskprep
function __diskprep_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    for line in ($words[1] __complete $words[2..-1] "$cur" 2>/dev/null)
        switch $line
            case :files
                __fish_complete_path "$cur"
            case :dirs
                __fish_complete_directories "$cur"
            case '*'
                echo $line
        end
    end
end
complete -c diskprep -f -a '(__diskprep_complete)'
`
