package stack_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLayersImportOnlyBelow holds the layer packages to the order a plan
// walks them: each imports the packages below it in this table and
// nothing of diskprep's else, so no layer reaches up into stack, or
// across into another layer it does not build on.
func TestLayersImportOnlyBelow(t *testing.T) {
	const mod = "github.com/diskprep/diskprep/"
	base := []string{"disk", "disk/crypt", "disk/fstab", "hwinfo", "hwinfo/probe", "internal/units"}
	below := map[string][]string{
		"internal/layer": base,
		"md":             append([]string{"internal/layer"}, base...),
		"lvm":            append([]string{"internal/layer"}, base...),
		"cache":          append([]string{"internal/layer"}, base...),
		"lvmcache":       append([]string{"internal/layer", "cache", "lvm"}, base...),
		"bcache":         append([]string{"internal/layer", "cache"}, base...),
	}
	for _, parent := range []string{".", "internal"} {
		des, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			d := filepath.ToSlash(filepath.Join(parent, de.Name()))
			if !de.IsDir() || d == "internal" || d == "testdata" {
				continue
			}
			if _, ok := below[d]; !ok {
				t.Errorf("disk/stack/%s is a package this test does not place: add it to the table", d)
			}
		}
	}
	for pkg, allowed := range below {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no Go files", pkg)
			continue
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range af.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				rel, ours := strings.CutPrefix(p, mod)
				if !ours {
					continue
				}
				if r, inStack := strings.CutPrefix(rel, "disk/stack/"); inStack {
					rel = r
				} else if rel == "disk/stack" {
					rel = "stack"
				}
				if !slices.Contains(allowed, rel) {
					t.Errorf("%s imports %s: a layer imports only what is below it (%s)", f, p, strings.Join(allowed, ", "))
				}
			}
		}
	}
}
