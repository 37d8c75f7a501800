// Package docs holds diskprep's user documentation, one Markdown page per
// command and per concept. The pages are embedded so that the man pages
// the binary prints (diskprep man COMMAND) are made from the same text as
// the pages people read on the web: the two cannot drift apart.
package docs

import "embed"

// Pages are the *.md files of this directory.
//
//go:embed *.md
var Pages embed.FS
