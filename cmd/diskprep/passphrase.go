package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/disk/crypt"
)

// askPassphrases asks, on the terminal and before any step, the
// passphrase of each LUKS2 layer that apply formats (twice) or opens
// (once); the answers are the apply's, by mapping name. Not on a
// terminal, it is bad input: nothing else can type a passphrase, and a
// script should give a key file.
func askPassphrases(ctx context.Context, e *env, layers []*crypt.Plan) (map[string][]byte, error) {
	if len(layers) == 0 {
		return nil, nil
	}
	in, ok := e.Stdin.(*os.File)
	if !ok || !isTerminal(in) {
		return nil, usageErr(fmt.Errorf("LUKS2 volume %s takes a passphrase, asked on a terminal, and standard input is none: run prepare on one, or give --key-file", layers[0].Name))
	}
	got := map[string][]byte{}
	for _, c := range layers {
		p, err := readPassphrase(ctx, in, e.Stderr, fmt.Sprintf("Passphrase for %s (LUKS2 on %s): ", c.Name, c.Backing))
		if err != nil {
			return nil, err
		}
		if len(p) == 0 {
			return nil, usageErr(fmt.Errorf("the passphrase for %s is empty: nothing was changed", c.Name))
		}
		if c.Format != nil {
			again, err := readPassphrase(ctx, in, e.Stderr, "The same again: ")
			if err != nil {
				return nil, err
			}
			same := string(again) == string(p)
			clear(again)
			if !same {
				return nil, usageErr(fmt.Errorf("the two passphrases for %s differ: nothing was changed", c.Name))
			}
		}
		got[c.Name] = p
	}
	return got, nil
}

// readPassphrase writes prompt to out and reads one line from the
// terminal in with its echo off; the terminal is put back as it was
// however the read ends (ctx done by a signal too).
func readPassphrase(ctx context.Context, in *os.File, out io.Writer, prompt string) ([]byte, error) {
	fd := int(in.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("read a passphrase: %w", err)
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return nil, fmt.Errorf("read a passphrase: %w", err)
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)
	fmt.Fprint(out, prompt)
	line, err := readLine(ctx, in)
	fmt.Fprintln(out) // the newline the terminal did not echo
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return nil, interrupted(" at the passphrase: nothing was changed", err)
		}
		return nil, fmt.Errorf("read a passphrase: %w", err)
	}
	return []byte(line), nil
}
