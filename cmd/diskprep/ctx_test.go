package main

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
)

// cancelHost is the recording fake whose programs honour their context,
// as exec.CommandContext does: under a cancelled one nothing runs. It
// notes each program asked for and each one run.
type cancelHost struct {
	*hosttest.Host
	mu         sync.Mutex
	asked, ran []string
}

func (h *cancelHost) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	h.mu.Lock()
	h.asked = append(h.asked, name)
	h.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.ran = append(h.ran, name)
	h.mu.Unlock()
	return h.Host.Run(ctx, name, args...)
}

// Ctrl-C during a prepare's planning stops the programs planning runs
// (pvs and lvs read LVM's state): the command's context reaches them, and
// the command ends as interrupted.
func TestPrepareCancelledStopsPlanningPrograms(t *testing.T) {
	m, h := stackMachine(t)
	ch := &cancelHost{Host: h}
	m.diskDeps = func(*env) disk.Deps { return disk.Deps{Host: ch} }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := runOn(ctx, m, []string{"diskprep", "prepare", "/dev/sdb", "/dev/sdc", "--lvm", "fast/scratch:1G", "--fs", "ext4", "--mount", "/scratch", "--dry-run"},
		strings.NewReader(""), &out, &errb)
	if code != exitInterrupted || strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("exit %d, stderr %q: want exit %d and one line", code, errb.String(), exitInterrupted)
	}
	if !slices.Contains(ch.asked, "pvs") {
		t.Errorf("planning asked for %v, want pvs among them", ch.asked)
	}
	if len(ch.ran) != 0 {
		t.Errorf("programs ran under a cancelled context: %v", ch.ran)
	}
	if out.Len() != 0 {
		t.Errorf("a plan was printed:\n%s", out.String())
	}
}

// Every child process runs under the command's context: no code outside
// tests makes a context of its own (context.Background, context.TODO) or
// starts a program without one (exec.Command, os.StartProcess,
// syscall.ForkExec, syscall.Exec), but for these places.
func TestNoContextOutsideTheCommands(t *testing.T) {
	allowed := map[string]string{
		// main makes the one context every command runs under.
		"cmd/diskprep/main.go:main": "context.Background",
	}
	// Test support imported by tests only: no command runs there.
	allowedDirs := []string{"internal/testenv/", "internal/guesttest/"}
	banned := map[string][]string{
		"context": {"Background", "TODO"},
		"os/exec": {"Command"},
		"os":      {"StartProcess"},
		"syscall": {"ForkExec", "Exec", "StartProcess"},
	}
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, dir := range allowedDirs {
			if strings.HasPrefix(rel, dir) {
				return nil
			}
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		seen++
		names := map[string]string{} // local name -> import path
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			names[name] = p
		}
		for _, decl := range f.Decls {
			fn := "(top level)"
			if fd, ok := decl.(*ast.FuncDecl); ok {
				fn = fd.Name.Name
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok || !slices.Contains(banned[names[x.Name]], sel.Sel.Name) {
					return true
				}
				what := names[x.Name][strings.LastIndex(names[x.Name], "/")+1:] + "." + sel.Sel.Name
				if allowed[rel+":"+fn] == what {
					return true
				}
				t.Errorf("%s: %s in %s: take the command's ctx as the first parameter instead", fset.Position(sel.Pos()), what, fn)
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("read %d Go files under %s: the walk missed the module", seen, root)
	}
}
