package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/diskprep/diskprep/internal/termtext"
)

// plainHandler is the logger of a run without --verbose: the few warnings
// and errors that get through are one readable line each ("diskprep:
// warning: udevadm settle failed: err=..."), not log records, and a child
// program's output (the "output" attribute, mkfs's progress drawing and
// all) is left to --verbose, which keeps it whole.
type plainHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	level slog.Level
	attrs []slog.Attr
}

func newPlainHandler(w io.Writer, level slog.Level) *plainHandler {
	return &plainHandler{mu: &sync.Mutex{}, w: w, level: level}
}

func (h *plainHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *plainHandler) Handle(_ context.Context, r slog.Record) error {
	kind := "warning"
	if r.Level >= slog.LevelError {
		kind = "error"
	} else if r.Level < slog.LevelWarn {
		kind = strings.ToLower(r.Level.String())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diskprep: %s: %s", kind, termtext.OneLine(r.Message))
	add := func(a slog.Attr) bool {
		if a.Key == "output" || a.Equal(slog.Attr{}) {
			return true
		}
		fmt.Fprintf(&b, " %s=%s", a.Key, termtext.OneLine(a.Value.String()))
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *plainHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

// WithGroup is not used by diskprep's packages; groups flatten.
func (h *plainHandler) WithGroup(string) slog.Handler { return h }
