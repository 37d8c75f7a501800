package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash or zsh)",
		ArgsUsage: "bash|zsh",
		Description: `Completion asks diskprep itself for the commands and flags, so it
always matches the installed version.

Examples:
  source <(diskprep completion bash)
  diskprep completion bash > /etc/bash_completion.d/diskprep
  diskprep completion zsh > "${fpath[1]}/_diskprep"`,
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() != 1 {
				return usageErr(fmt.Errorf("completion: want one shell, bash or zsh"))
			}
			return writeCompletion(e.Stdout, c.Args().First())
		}),
	}
}

func writeCompletion(w io.Writer, shell string) error {
	switch shell {
	case "bash":
		_, err := io.WriteString(w, bashCompletion)
		return err
	case "zsh":
		_, err := io.WriteString(w, zshCompletion)
		return err
	}
	return usageErr(fmt.Errorf("completion: unknown shell %q (valid: bash, zsh)", shell))
}

// The scripts hand the words typed so far to `diskprep ... --generate-bash-completion`,
// which urfave/cli answers with the matching commands and flags.
const bashCompletion = `# bash completion for diskprep
_diskprep() {
    local cur words
    cur="${COMP_WORDS[COMP_CWORD]}"
    words=("${COMP_WORDS[@]:0:COMP_CWORD}")
    if [[ "$cur" == -* ]]; then
        mapfile -t COMPREPLY < <("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null | cut -d: -f1 | grep -- "^$cur")
    else
        mapfile -t COMPREPLY < <("${words[@]}" --generate-bash-completion 2>/dev/null | cut -d: -f1 | grep -- "^$cur")
        if [ ${#COMPREPLY[@]} -eq 0 ]; then
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        fi
    fi
}
complete -o default -F _diskprep diskprep
`

const zshCompletion = `#compdef diskprep
_diskprep() {
    local -a opts
    local cur=${words[-1]}
    if [[ "$cur" == -* ]]; then
        opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
    else
        opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
    fi
    if [[ "${opts[1]}" != "" ]]; then
        _describe 'values' opts
    else
        _files
    fi
}
compdef _diskprep diskprep
`
