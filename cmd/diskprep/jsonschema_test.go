package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/cmd/diskprep/cachebench"
	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/hwinfo"
)

// jsonDocFile is where every -o json schema is documented.
const jsonDocFile = "../../docs/json.md"

// jsonDocSchemas reads docs/json.md: for each "## `diskprep/NAME/vN`"
// section, the fields its table lists ("| `field` | type | meaning |").
func jsonDocSchemas(t *testing.T) map[string]map[string]bool {
	t.Helper()
	f, err := os.Open(jsonDocFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heading := regexp.MustCompile("^## `(diskprep/[a-z-]+/v[0-9]+)`$")
	row := regexp.MustCompile("^\\| `([a-z0-9_]+)` \\|")
	docs := map[string]map[string]bool{}
	var cur map[string]bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := heading.FindStringSubmatch(line); m != nil {
			if docs[m[1]] != nil {
				t.Errorf("%s: %s documented twice", jsonDocFile, m[1])
			}
			cur = map[string]bool{}
			docs[m[1]] = cur
			continue
		}
		if strings.HasPrefix(line, "## ") {
			cur = nil
		}
		if m := row.FindStringSubmatch(line); m != nil && cur != nil {
			cur[m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return docs
}

// jsonOutput is one command's -o json output.
type jsonOutput struct {
	name   string // the command line, for messages
	schema string // the one it must name
	out    string
}

// checkDocumented fails unless v's top-level object names want as its
// schema, and every object in v that names a diskprep schema (the top
// level and nested ones) is documented with each of its fields.
func checkDocumented(t *testing.T, o jsonOutput, docs map[string]map[string]bool) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(o.out), &v); err != nil {
		t.Errorf("%s: not one JSON document: %v\n%s", o.name, err, o.out)
		return
	}
	top, ok := v.(map[string]any)
	if !ok || top["schema"] != o.schema {
		t.Errorf("%s: top level has schema %v, want an object with %q", o.name, top["schema"], o.schema)
		return
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["schema"].(string); ok && strings.HasPrefix(s, "diskprep/") {
				fields, ok := docs[s]
				if !ok {
					t.Errorf("%s: %s is %s, which %s does not document", o.name, path, s, jsonDocFile)
				}
				for k := range v {
					if ok && !fields[k] {
						t.Errorf("%s: %s (%s) has field %q, which %s does not document", o.name, path, s, k, jsonDocFile)
					}
				}
			}
			for k, c := range v {
				walk(path+"."+k, c)
			}
		case []any:
			for _, c := range v {
				walk(path+"[]", c)
			}
		}
	}
	walk("$", v)
}

// jsonFields are the JSON names of t's fields, embedded structs' included.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			out = append(out, jsonFields(ft)...)
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// The Go types behind each documented schema: the doc lists exactly their
// fields, those an example output leaves out (omitempty) included.
var jsonSchemaTypes = map[string]any{
	hwinfo.Schema:           hwinfo.Host{},
	preparePlanSchema:       preparePlanDoc{},
	disk.PlanSchema:         disk.Plan{},
	stack.StackPlanSchema:   stack.StackPlan{},
	prepareResultSchema:     prepareResultDoc{},
	disk.ResultSchema:       disk.Result{},
	stack.StackResultSchema: stack.StackResult{},
	disk.ReleasePlanSchema:  disk.ReleasePlan{},
	disk.DiffSchema:         planDiffDoc{},
	stack.ReplacePlanSchema: stack.ReplacePlan{},
	replaceResultSchema:     replaceResultDoc{},
	releaseResultSchema:     releaseResultDoc{},
	record.Schema:           record.Record{},
	report.ResultListSchema: report.ResultListJSON{},
	report.ComparisonSchema: struct {
		Schema string `json:"schema"`
		compare.Comparison
	}{},
	cachebench.Schema: cachebench.Result{},
	versionSchema:     versionDoc{},
	clockOffsetSchema: clockOffsetDoc{},
}

func TestJSONSchemaDocMatchesTypes(t *testing.T) {
	docs := jsonDocSchemas(t)
	var documented, typed []string
	for s := range docs {
		documented = append(documented, s)
	}
	for s, v := range jsonSchemaTypes {
		typed = append(typed, s)
		fields := jsonFields(reflect.TypeOf(v))
		if !slices.Contains(fields, "schema") {
			t.Errorf("%s: %T has no schema field", s, v)
		}
		doc := docs[s]
		for _, f := range fields {
			if doc != nil && !doc[f] {
				t.Errorf("%s: field %q of %T is not in %s", s, f, v, jsonDocFile)
			}
		}
		for f := range doc {
			if !slices.Contains(fields, f) {
				t.Errorf("%s: %s documents %q, which %T does not have", s, jsonDocFile, f, v)
			}
		}
	}
	sort.Strings(documented)
	sort.Strings(typed)
	if !slices.Equal(documented, typed) {
		t.Errorf("%s documents %v; the schemas diskprep prints are %v", jsonDocFile, documented, typed)
	}
}

// Every command that takes -o json prints one document naming its schema,
// documented in docs/json.md with each field it has: run on the fakes and
// fixtures the other tests use.
func TestJSONOutputsNameADocumentedSchema(t *testing.T) {
	docs := jsonDocSchemas(t)
	var outs []jsonOutput
	run := func(schema string, m *machine, args ...string) {
		t.Helper()
		code, out, errOut := runArgsOn(m, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errOut)
		}
		outs = append(outs, jsonOutput{strings.Join(args, " "), schema, out})
	}

	run(hwinfo.Schema, nil, "-o", "json", "inventory", "--root", "../../hwinfo/testdata/desktop-nvme-sata")
	run(versionSchema, nil, "--version", "-o", "json")
	run(clockOffsetSchema, nil, "clock-offset", "-o", "json", "../../bench/clock/testdata/samples-ssh.txt")

	// prepare and release: one disk, a plan file, a stack, a cache; dry
	// run and applied, on the recording fake.
	m, _ := fakeMachine(t, 1000, false)
	run(preparePlanSchema, m, "-o", "json", "prepare", "/dev/sdb", "--fs", "xfs", "--dry-run")
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(plan, []byte("version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions:\n      - {size: rest, fs: xfs}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(preparePlanSchema, m, "-o", "json", "prepare", "--plan", plan, "--dry-run")
	m, _ = stackMachine(t)
	run(preparePlanSchema, m, "-o", "json", "prepare", "/dev/sdb", "/dev/sdc", "--raid", "1", "--fs", "xfs", "--mount", "/data", "--dry-run")
	m, _ = cacheMachine(t)
	cache := []string{"-o", "json", "prepare", "--cache", "/dev/sdb", "--cache-device", "/dev/sdd", "--fs", "xfs", "--mount", "/srv", "--persist"}
	run(preparePlanSchema, m, append(cache, "--dry-run")...)
	run(prepareResultSchema, m, append(cache, "--yes")...)
	run(disk.DiffSchema, m, append(slices.Clip(cache), "--diff")...)
	run(disk.ReleasePlanSchema, m, "-o", "json", "release", "/srv", "--wipe", "--dry-run")
	run(releaseResultSchema, m, "-o", "json", "release", "/srv", "--wipe", "--yes")
	m, _ = cacheMachine(t)
	run(prepareResultSchema, m, "-o", "json", "prepare", "/dev/sdc", "--fs", "ext4", "--mount", "/data", "--yes")
	m = replaceMachine(t)
	run(stack.ReplacePlanSchema, m, "-o", "json", "replace", "/dev/md/data", "--with", "/dev/sde", "--dry-run")
	run(replaceResultSchema, m, "-o", "json", "replace", "/dev/md/data", "--with", "/dev/sde", "--yes", "--no-wait")

	// bench, one target and several, then the store they filled.
	results := filepath.Join(t.TempDir(), "results")
	spec := "name=rr,rw=randread,bs=4k,size=4M,runtime=100ms"
	run(record.Schema, nil, "-o", "json", "--results", results, "bench", t.TempDir(), "--workload", spec, "--label", "one")
	run(report.ComparisonSchema, nil, "-o", "json", "--results", results, "bench", t.TempDir(), t.TempDir(), "--label", "a,b", "--repeat", "2", "--workload", spec)
	listed, _, err := record.List(results)
	if err != nil || len(listed) != 3 {
		t.Fatalf("store: %d records, %v", len(listed), err)
	}
	id := listed[0].Record.ID
	run(report.ResultListSchema, nil, "-o", "json", "--results", results, "results", "list")
	run(record.Schema, nil, "-o", "json", "--results", results, "results", "show", id)
	run(record.Schema, nil, "--results", results, "results", "export", id, "--as", "json")
	run(report.ComparisonSchema, nil, "-o", "json", "--results", results, "compare")

	// fscompare: the disk's prepare and release faked, the benchmarks
	// real on the directory it "mounted".
	_, m = useTempRoot(t)
	m.readFacts = func(context.Context, string, *env) (*hwinfo.Host, error) { return &hwinfo.Host{Hostname: "fake"}, nil }
	m.geteuid = func() int { return 0 }
	m.apply = func(_ context.Context, p *disk.Plan, _ disk.Deps) (*disk.Result, error) {
		return &disk.Result{Schema: disk.ResultSchema, Device: "/dev/loop9", Partitions: []disk.PartResult{{Device: "/dev/loop9p1", FS: p.Partitions[0].FS}}}, nil
	}
	m.planRelease = func(_ context.Context, target string, _ disk.ReleaseOptions, _ disk.Deps) (*disk.ReleasePlan, error) {
		return &disk.ReleasePlan{Schema: disk.ReleasePlanSchema, Target: target}, nil
	}
	m.applyRelease = func(_ context.Context, p *disk.ReleasePlan, _ disk.Deps) (*disk.ReleaseResult, error) {
		return &disk.ReleaseResult{Target: p.Target}, nil
	}
	run(report.ComparisonSchema, m, "-o", "json", "--results", results, "-q", "fscompare", "--image", filepath.Join(t.TempDir(), "x.img"), "--size", "1G",
		"--fs", "xfs,ext4", "--set", "quick", "--runtime", "1s", "--repeat", "1", "--mount", t.TempDir(), "--yes")

	// cachebench needs root and two real disks to run whole (its guest
	// test does): its -o json is written by the renderer it calls.
	cr := &cachebench.Result{Schema: cachebench.Schema, Kind: "lvmcache", Mode: "writethrough", Origin: "/dev/sdb",
		CacheDevice: "/dev/sdd1", CachedVolume: "/dev/cachebench/data", CacheBytes: 1 << 30,
		WorkingSets: []cachebench.WorkingSet{{Name: "below"}}, Flush: &cachebench.Flush{}, Records: []string{id}, Warnings: []string{"w"}}
	var cbuf bytes.Buffer
	if err := cr.Write(&cbuf, "json", nil); err != nil {
		t.Fatal(err)
	}
	outs = append(outs, jsonOutput{"cachebench -o json (its renderer)", cachebench.Schema, cbuf.String()})

	seen := map[string]bool{}
	for _, o := range outs {
		checkDocumented(t, o, docs)
		seen[o.schema] = true
	}
	// Every top-level schema of the doc's table is printed by some run above.
	for s := range jsonSchemaTypes {
		nested := s == disk.PlanSchema || s == stack.StackPlanSchema || s == disk.ResultSchema || s == stack.StackResultSchema
		if !seen[s] && !nested {
			t.Errorf("no command run here printed %s", s)
		}
	}
}
