package report

import (
	"strings"
	"testing"
)

// TestFitAmongKeepsWhatDiffers: column names that share a long part are
// cut in that part, not at the end where they differ.
func TestFitAmongKeepsWhatDiffers(t *testing.T) {
	names := []string{
		"xfs · /tmp/diskprep-fscompare-1183225061/mnt",
		"xfs · /tmp/diskprep-fscompare-1184490371/mnt",
		"ext4 · /tmp/diskprep-fscompare-1183225061/mnt",
	}
	width := textExtent("xfs · /tmp/diskprep-fs", fontBase, false)
	seen := map[string]string{}
	for _, n := range names {
		got := fitAmong(n, names, fontBase, false, width)
		if textExtent(got, fontBase, false) > width {
			t.Errorf("fitAmong(%q) = %q, wider than %.0f px", n, got, width)
		}
		if o, dup := seen[got]; dup {
			t.Errorf("%q and %q both shortened to %q", o, n, got)
		}
		if id := n[strings.LastIndex(n, "-")+5 : strings.LastIndex(n, "/")]; strings.HasPrefix(n, "xfs") && !strings.Contains(got, id) {
			t.Errorf("fitAmong(%q) = %q, lost %q, where it differs from its neighbour", n, got, id)
		}
		seen[got] = n
	}
	// Names with nothing in common are cut at the end, as before.
	if got := fitAmong("a very long column name indeed", []string{"a very long column name indeed", "zz"}, fontBase, false, 60); !strings.HasSuffix(got, "…") {
		t.Errorf("fitAmong with no shared part = %q, want an end cut", got)
	}
}
