package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

// manCommand prints the man page made from the CLI definition itself, so the
// page shipped in the packages (scripts/package.sh) always matches the
// binary's commands and flags. Hidden: it is for packagers, not for users.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:      "man",
		Usage:     "print the diskprep(8) man page in roff (for packagers)",
		ArgsUsage: " ",
		Hidden:    true,
		Action: action(func(c *cli.Context, e *env) error {
			if c.NArg() != 0 {
				return usageErr(fmt.Errorf("man takes no arguments"))
			}
			return writeMan(e.Stdout, c.App)
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
