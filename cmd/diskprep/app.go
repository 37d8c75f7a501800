package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/internal/suggest"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

func toolVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			if dirty {
				rev += "-dirty"
			}
			return "dev-" + rev
		}
	}
	return "dev"
}

// env is what every command gets from the global flags: where to write, how,
// and which roots to read and store under. Tests build one by hand.
type env struct {
	Stdin      io.Reader
	Stdout     io.Writer
	Stderr     io.Writer
	Format     string // table, json, markdown, csv, html, svg
	Root       string // hardware facts root ("" = this machine)
	ResultsDir string
	Quiet      bool
	Verbose    bool
	NoColor    bool
	IsTerminal bool // stdout is a terminal: progress lines, colour, prompts
	// Width is the number of columns of the terminal stdout is ($COLUMNS
	// when set, else the terminal's own size); 0 when stdout is no
	// terminal or its size is unknown: tables are then 120 columns wide.
	Width  int
	Redact bool // hide serials, WWNs, hostnames, UUIDs in what is shown or exported (internal/redact)
	Logger *slog.Logger
}

// format checks the chosen output format against the ones a command offers.
func (e *env) format(allowed ...string) (string, error) {
	f := e.Format
	if f == "" {
		f = "table"
	}
	if !slices.Contains(allowed, f) {
		return "", usageErr(fmt.Errorf("unknown output format %q for this command%s (valid: %s)", f, suggest.Hint(f, allowed, ""), strings.Join(allowed, ", ")))
	}
	return f, nil
}

// Global flags work before or after the command name (reorderArgs moves them).
func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"o"}, Usage: "output `FORMAT`: table, json, markdown (some commands add csv, html, svg)"},
		&cli.StringFlag{Name: "results", Usage: "results store `DIR` (default $DISKPREP_RESULTS, else /var/lib/diskprep/results as root, else $XDG_DATA_HOME/diskprep/results)", EnvVars: []string{"DISKPREP_RESULTS"}},
		&cli.StringFlag{Name: "root", Usage: "read hardware facts from a fixture tree at `DIR` instead of this machine", EnvVars: []string{"GHW_CHROOT"}},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only results and errors, no progress"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log each step and show error details"},
		&cli.BoolFlag{Name: "no-color", Usage: "no colour in output (also NO_COLOR)"},
		&cli.BoolFlag{Name: "redact", Usage: "replace serial numbers, WWNs, hostnames, UUIDs and MACs in the output by stable short hashes (stored records keep them)", EnvVars: []string{"DISKPREP_REDACT"}},
	}
}

// commands lists every command; one file per command.
func commands() []*cli.Command {
	return []*cli.Command{
		inventoryCommand(),
		prepareCommand(),
		releaseCommand(),
		replaceCommand(),
		benchCommand(),
		resultsCommand(),
		compareCommand(),
		fscompareCommand(),
		cachebenchCommand(),
		clockOffsetCommand(),
		completionCommand(),
		completeCommand(),
		manCommand(),
	}
}

// resultsTree is the results store as an absolute path, for the planner
// to keep mount points out of.
func (e *env) resultsTree() string {
	if abs, err := filepath.Abs(e.ResultsDir); err == nil {
		return abs
	}
	return e.ResultsDir
}

func defaultResultsDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/diskprep/results"
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "diskprep", "results")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "diskprep", "results")
	}
	return filepath.Join(os.TempDir(), "diskprep-results")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// terminalWidth is the number of columns of the terminal w is: columns
// (the value of $COLUMNS, which a user sets to ask for a width) when it is
// a positive number, else the terminal's size (TIOCGWINSZ). It is 0 when
// w is no terminal, whatever $COLUMNS says (a file or a pipe gets the
// table it always got), or when the size is unknown (a serial console
// reporting 0 columns).
func terminalWidth(w io.Writer, columns string) int {
	if !isTerminal(w) {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(columns)); err == nil && n > 0 {
		return n
	}
	ws, err := unix.IoctlGetWinsize(int(w.(*os.File).Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// envFrom builds the env of a command from the global flags.
func envFrom(c *cli.Context, stdin io.Reader, stdout, stderr io.Writer) *env {
	e := &env{
		Stdin:      stdin,
		Stdout:     stdout,
		Stderr:     stderr,
		Format:     c.String("format"),
		Root:       c.String("root"),
		ResultsDir: c.String("results"),
		Quiet:      c.Bool("quiet"),
		Verbose:    c.Bool("verbose"),
		NoColor:    c.Bool("no-color") || os.Getenv("NO_COLOR") != "",
		IsTerminal: isTerminal(stdout),
		Width:      terminalWidth(stdout, os.Getenv("COLUMNS")),
		Redact:     c.Bool("redact"),
	}
	if e.ResultsDir == "" {
		e.ResultsDir = defaultResultsDir()
	}
	level := slog.LevelWarn
	switch {
	case e.Verbose:
		level = slog.LevelDebug
	case e.Quiet:
		level = slog.LevelError
	}
	if e.Verbose {
		e.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	} else {
		e.Logger = slog.New(newPlainHandler(stderr, level))
	}
	return e
}

// runState carries what run needs to know after the app returns, and the
// machine the commands act on (machine.go).
type runState struct {
	verbose bool
	machine *machine
}

// urfave/cli/v2 takes the --version flag from a package variable; its
// default's -v alias would shadow --verbose. It is set once, when the
// program starts, never per run, so apps built concurrently (tests) do not
// race on it. The default --help/-h flag is kept as it is.
func init() {
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and exit", DisableDefaultText: true}
	cli.VersionPrinter = printVersion
}

// printVersion answers --version: one line, or with -o json a document
// (diskprep/version/v1) for the scripts that check which diskprep runs.
func printVersion(c *cli.Context) {
	if c.String("format") == "json" {
		writeJSON(c.App.Writer, versionDoc{Schema: versionSchema, Version: c.App.Version, Go: runtime.Version()})
		return
	}
	fmt.Fprintf(c.App.Writer, "%s version %s\n", c.App.Name, c.App.Version)
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, st *runState) *cli.App {
	app := &cli.App{
		Name:    "diskprep",
		Usage:   "inventory, prepare, benchmark and compare the data disks of a Linux host",
		Version: toolVersion(),
		Description: `diskprep replaces the routine done by hand on every new box: write down
the hardware, partition, mkfs, mount, edit fstab, run fio, copy the numbers
into a table, repeat per configuration and compare by eye.

Flags may be given before or after the command name and its arguments.

Examples:
  diskprep inventory                     what is in this box
  diskprep inventory -o markdown         an "Environment" section for a write-up`,
		Flags:                globalFlags(),
		Commands:             commands(),
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		Reader:               stdin,
		Writer:               stdout,
		ErrWriter:            stderr,
		ExitErrHandler:       func(*cli.Context, error) {}, // main owns exit codes
		Metadata:             map[string]any{"state": st},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr(usageHint(c, err))
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return unknownCommand(c.Args().First(), c.App.Commands, "diskprep --help")
			}
			return cli.ShowAppHelp(c)
		},
	}
	var setUsage func(cmds []*cli.Command)
	setUsage = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			if cmd.OnUsageError == nil {
				cmd.OnUsageError = app.OnUsageError
			}
			setUsage(cmd.Subcommands)
		}
	}
	setUsage(app.Commands)
	return app
}

// action adapts a command body to cli: it builds the env from the global
// flags and the app's streams, so the body and the runX behind it never see
// os.Stdout and tests call runX directly with buffers.
func action(body func(c *cli.Context, e *env) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		e := envFrom(c, c.App.Reader, c.App.Writer, c.App.ErrWriter)
		if st, ok := c.App.Metadata["state"].(*runState); ok {
			st.verbose = e.Verbose
		}
		if e.Root != "" {
			fi, err := os.Stat(e.Root)
			if err != nil {
				return fmt.Errorf("--root %s: %w", e.Root, errors.Unwrap(err))
			}
			if !fi.IsDir() {
				return fmt.Errorf("--root %s: not a directory", e.Root)
			}
		}
		return body(c, e)
	}
}
