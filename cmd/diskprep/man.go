package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/diskprep/diskprep/docs"
	"github.com/diskprep/diskprep/internal/atomicfile"
	"github.com/diskprep/diskprep/internal/suggest"
	"github.com/urfave/cli/v2"
)

// manDocs names the page of docs/ that is each command's man page body.
// Every visible command has one (TestEveryCommandHasAManPage).
var manDocs = map[string]string{
	"inventory":    "inventory.md",
	"prepare":      "prepare.md",
	"release":      "prepare.md",
	"replace":      "stacks.md",
	"bench":        "bench.md",
	"results":      "results.md",
	"compare":      "compare.md",
	"fscompare":    "compare.md",
	"cachebench":   "cachebench.md",
	"clock-offset": "fleets.md",
	"completion":   "cli.md",
}

// manCommand prints the man pages: diskprep(8) made from the CLI definition
// itself, and diskprep-COMMAND(8) made from the command's definition (its
// synopsis and flags) and its page in docs/ (the description), so the
// pages shipped in the packages (scripts/package.sh) always match the
// binary's commands and flags and the documentation. Hidden: it is for
// packagers; users run man.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:      "man",
		Usage:     "print the diskprep(8) man page, or diskprep-COMMAND(8), in roff (for packagers)",
		ArgsUsage: "[COMMAND]",
		Hidden:    true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "write diskprep.8 and every diskprep-COMMAND.8 into `DIR` instead"},
		},
		Action: action(func(c *cli.Context, e *env) error {
			if dir := c.String("dir"); dir != "" {
				if c.NArg() != 0 {
					return usageErr(fmt.Errorf("man --dir takes no COMMAND: it writes every page"))
				}
				return writeManDir(dir, c.App)
			}
			switch c.NArg() {
			case 0:
				return writeMan(e.Stdout, c.App)
			case 1:
				name := c.Args().First()
				cmd := c.App.Command(name)
				if cmd == nil || cmd.Hidden {
					var names []string
					for _, v := range c.App.VisibleCommands() {
						names = append(names, v.Name)
					}
					return usageErr(fmt.Errorf("man: no command %q%s (valid: %s)", name, suggest.Hint(name, names, ""), strings.Join(names, ", ")))
				}
				page, err := commandMan(c.App, cmd)
				if err != nil {
					return err
				}
				_, err = io.WriteString(e.Stdout, page)
				return err
			}
			return usageErr(fmt.Errorf("man takes at most one COMMAND"))
		}),
	}
}

func writeMan(w io.Writer, app *cli.App) error {
	page, err := app.ToMan()
	if err != nil {
		return fmt.Errorf("man page: %w", err)
	}
	_, err = io.WriteString(w, page)
	return err
}

// commandMan is diskprep-NAME(8): NAME and SYNOPSIS from the command, the
// DESCRIPTION its docs page (without the page's title), its OPTIONS.
func commandMan(app *cli.App, cmd *cli.Command) (string, error) {
	file, ok := manDocs[cmd.Name]
	if !ok {
		return "", fmt.Errorf("man page: no page in docs/ for %s", cmd.Name)
	}
	body, err := docs.Pages.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("man page: %w", err)
	}
	text := string(body)
	if strings.HasPrefix(text, "# ") {
		_, text, _ = strings.Cut(text, "\n")
	}
	text = manLinks(app.Commands, file).Replace(text)
	text = docLink.ReplaceAllString(text, "]("+docsURL+"$1)")
	sub := &cli.App{
		Name:        app.Name + "-" + cmd.Name,
		Usage:       cmd.Usage,
		UsageText:   strings.TrimSpace(app.Name + " " + cmd.Name + " [OPTIONS] " + cmd.ArgsUsage),
		Description: strings.TrimSpace(text) + "\n\nSee also diskprep(8) and, for every page, https://github.com/diskprep/diskprep/tree/main/docs.",
		Flags:       cmd.VisibleFlags(),
		Commands:    cmd.Subcommands,
		HideVersion: true,
		HideHelp:    true,
	}
	page, err := sub.ToMan()
	if err != nil {
		return "", fmt.Errorf("man page of %s: %w", cmd.Name, err)
	}
	return page, nil
}

// docsURL is where the pages of docs/ are read online.
const docsURL = "https://github.com/diskprep/diskprep/blob/main/docs/"

// manLinks rewrites the links of page (a file of docs/) to the other
// commands' pages: each reads as that man page, named after the first
// command in cmds that the page serves (prepare.md is also release's).
func manLinks(cmds []*cli.Command, page string) *strings.Replacer {
	var pairs []string
	seen := map[string]bool{page: true}
	for _, c := range cmds {
		if f, ok := manDocs[c.Name]; ok && !seen[f] {
			seen[f] = true
			pairs = append(pairs, "("+f+")", " (see diskprep-"+c.Name+"(8))")
		}
	}
	return strings.NewReplacer(pairs...)
}

// docLink is a markdown link to a page of docs/, with its anchor if any.
var docLink = regexp.MustCompile(`\]\(([a-z0-9-]+\.md(?:#[^)\s]*)?)\)`)

// writeManDir writes every page into dir, each atomically.
func writeManDir(dir string, app *cli.App) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	main, err := app.ToMan()
	if err != nil {
		return fmt.Errorf("man page: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, app.Name+".8"), []byte(main), 0o644); err != nil {
		return err
	}
	for _, cmd := range app.VisibleCommands() {
		page, err := commandMan(app, cmd)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(dir, app.Name+"-"+cmd.Name+".8"), []byte(page), 0o644); err != nil {
			return err
		}
	}
	return nil
}
