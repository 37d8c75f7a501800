package disk

import (
	"fmt"
	"strings"

	"github.com/diskprep/diskprep/internal/units"
)

// Destructive reports whether applying p writes to the disk (a table or a
// filesystem), which is what needs a confirmation.
func (p *Plan) Destructive() bool {
	if p.Table != nil || (p.Image != nil && p.Image.Recreate) {
		return true
	}
	for _, pp := range p.Partitions {
		if pp.Mkfs != nil {
			return true
		}
	}
	return false
}

// NeedConfirmation decides whether the user must be asked before applying
// p: never for a plan that writes nothing, nor with --yes; with no terminal
// to ask on, it refuses rather than write unconfirmed.
//
// A new image file that diskprep creates holds nothing that could be lost, so
// it needs no question either: that keeps `prepare --image` and `fscompare
// --image` usable from scripts and the README's first command.
func NeedConfirmation(p *Plan, yes, terminal bool) (ask bool, err error) {
	if !p.Destructive() || yes || (p.Image != nil && p.Image.Create) {
		return false, nil
	}
	if !terminal {
		return false, Refuse(p.Device, "no terminal to confirm on: pass --yes to write without asking")
	}
	return true, nil
}

// ConfirmationPrompt is the question put to the user: which disk, and what
// will be lost.
func ConfirmationPrompt(p *Plan) string {
	var b strings.Builder
	d := p.Disk
	target := p.Device
	if p.Image != nil {
		target = "image " + p.Image.Path
	}
	fmt.Fprintf(&b, "About to write to %s\n", target)
	fmt.Fprintf(&b, "  model:  %s\n  serial: %s\n  size:   %s (%d bytes)\n", orNone(d.Model), orNone(d.Serial), units.FormatSize(d.SizeBytes), d.SizeBytes)
	if len(p.Destroys) > 0 {
		fmt.Fprintf(&b, "  this DESTROYS:\n")
		for _, s := range p.Destroys {
			fmt.Fprintf(&b, "    - %s\n", s)
		}
	} else {
		fmt.Fprintf(&b, "  nothing is on it now\n")
	}
	fmt.Fprintf(&b, "Continue? [y/N] ")
	return b.String()
}

// Confirmed interprets an answer: only "y" or "yes" say yes.
func Confirmed(answer string) bool {
	a := strings.ToLower(strings.TrimSpace(answer))
	return a == "y" || a == "yes"
}

// ErrNotConfirmed is returned (wrapping ErrRefused) when the user says no.
var ErrNotConfirmed = fmt.Errorf("not confirmed: %w", ErrRefused)
