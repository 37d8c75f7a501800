// Package docs holds diskprep's user documentation, one Markdown page per
// command and per concept. The pages are embedded so that the man pages
// the binary prints (diskprep man COMMAND) are made from the same text as
// the pages people read on the web: the two cannot drift apart.
package docs

import "embed"

// Pages are the pages that are man pages too (cmd/diskprep's manDocs):
// only those, so that the release binary carries no page about the test
// builds (testing.md names the crash-test hooks, which scripts/test.sh
// checks the release binary never contains).
//
//go:embed cli.md inventory.md prepare.md stacks.md bench.md results.md compare.md cachebench.md fleets.md
var Pages embed.FS
