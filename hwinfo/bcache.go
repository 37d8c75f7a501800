package hwinfo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// bcache devices (drivers/md/bcache) are stacked block devices: bcacheN
// over a backing device, cached by the caches of a cache set. Their sysfs
// (Documentation/admin-guide/bcache.rst, super.c): bcacheN/slaves names the
// backing device, bcacheN/bcache is the backing device's bcache directory,
// whose cache link is the cache set; the set's cacheN links are the caches'
// bcache directories (sdb/bcache), its bdevN the backing devices', whose
// dev link is the bcache device. A cache's bcache/set links back to the set.

func isBcache(name string) bool { return strings.HasPrefix(name, "bcache") }

// bcacheLowers lists what the bcache device at sys is built on: its backing
// device, then the caches of its cache set.
func (r *reader) bcacheLowers(sys string) []string {
	var out []string
	entries, _ := os.ReadDir(r.path(sys + "/slaves"))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	set := sys + "/bcache/cache"
	for _, link := range r.numbered(set, "cache") {
		if dev := r.linkOwner(set + "/" + link); dev != "" {
			out = append(out, dev)
		}
	}
	return out
}

// bcacheUsersOfCache names the bcache devices the cache device at sys
// caches, none when it is no bcache cache.
func (r *reader) bcacheUsersOfCache(sys string) []string {
	set := sys + "/bcache/set"
	var out []string
	for _, link := range r.numbered(set, "bdev") {
		if target, err := os.Readlink(r.path(set + "/" + link + "/dev")); err == nil {
			out = append(out, filepath.Base(target))
		}
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
