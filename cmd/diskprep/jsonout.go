package main

import (
	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack"
)

// The -o json documents that cmd assembles itself. Each command has one
// top-level shape whatever its flags, named by its "schema" field and
// described in docs/json.md (jsonschema_test.go holds the two together).
const (
	// preparePlanSchema is prepare --dry-run: every disk's plan and the
	// stacks, also for one disk (plan/v1 was one disk's plan alone, or a
	// bare list of them, depending on the flags).
	preparePlanSchema = "diskprep/plan/v2"
	// prepareResultSchema is prepare applied: what each disk and the
	// stacks got (prepare/v1 was one disk's result alone, or a list).
	prepareResultSchema = "diskprep/prepare/v2"
	// releaseResultSchema is release applied.
	releaseResultSchema = "diskprep/release/v1"
	// versionSchema is --version -o json.
	versionSchema = "diskprep/version/v1"
)

// versionDoc is what --version -o json prints.
type versionDoc struct {
	Schema  string `json:"schema"`
	Version string `json:"version"`
	Go      string `json:"go"`
}

// preparePlanDoc is what prepare --dry-run -o json prints.
type preparePlanDoc struct {
	Schema string           `json:"schema"`
	Disks  []*disk.Plan     `json:"disks"`
	Stacks *stack.StackPlan `json:"stacks"`
}

func newPreparePlanDoc(plans []*disk.Plan, sp *stack.StackPlan) preparePlanDoc {
	if plans == nil {
		plans = []*disk.Plan{}
	}
	return preparePlanDoc{Schema: preparePlanSchema, Disks: plans, Stacks: sp}
}

// prepareResultDoc is what prepare -o json prints once applied.
type prepareResultDoc struct {
	Schema string             `json:"schema"`
	Disks  []*disk.Result     `json:"disks"`
	Stacks *stack.StackResult `json:"stacks"`
}

func newPrepareResultDoc(results []*disk.Result, sres *stack.StackResult) prepareResultDoc {
	if results == nil {
		results = []*disk.Result{}
	}
	return prepareResultDoc{Schema: prepareResultSchema, Disks: results, Stacks: sres}
}

// releaseResultDoc is what release -o json prints once applied: the
// result's fields under a schema name.
type releaseResultDoc struct {
	Schema string `json:"schema"`
	*disk.ReleaseResult
}
