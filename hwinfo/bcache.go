package hwinfo

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// bcache devices (drivers/md/bcache) are stacked block devices: bcacheN
// over a backing device, cached by the caches of a cache set. The kernel
// links both kinds as slaves of bcacheN and holders of theirs (as a 6.1
// guest shows), and tells them apart (Documentation/admin-guide/bcache.rst,
// super.c): bcacheN/bcache is the backing device's bcache directory, whose
// cache link is the cache set, whose cacheN links are the caches' bcache
// directories (.../block/sdb/bcache).

func isBcache(name string) bool { return strings.HasPrefix(name, "bcache") }

// bcacheLowers lists what the bcache device at sys is built on: its backing
// device, then the caches of its cache set, then any other slave.
func (r *reader) bcacheLowers(sys string) []string {
	var out []string
	add := func(name string) {
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	add(r.linkOwner(sys + "/bcache"))
	set := sys + "/bcache/cache"
	for _, link := range r.numbered(set, "cache") {
		add(r.linkOwner(set + "/" + link))
	}
	entries, _ := os.ReadDir(r.path(sys + "/slaves"))
	for _, e := range entries {
		add(e.Name())
	}
	return out
}

// linkOwner is the device whose bcache directory the link at p points to:
// "sdb" for .../block/sdb/bcache.
func (r *reader) linkOwner(p string) string {
	target, err := os.Readlink(r.path(p))
	if err != nil || filepath.Base(target) != "bcache" {
		return ""
	}
	return filepath.Base(filepath.Dir(target))
}

// numbered lists the entries of dir named prefix0, prefix1 ...
func (r *reader) numbered(dir, prefix string) []string {
	entries, _ := os.ReadDir(r.path(dir))
	var out []string
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), prefix); ok {
			if _, err := strconv.Atoi(n); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	return out
}
