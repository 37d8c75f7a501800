package hosttest

import (
	"io/fs"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"
)

// node is one entry of the fake's file system: a directory, a regular file
// (small ones hold data, image files a sparse store), a symlink or a block
// device node.
type node struct {
	mode  fs.FileMode
	data  []byte
	image *sparse // regular files made by CreateImage: sparse, any size
	size  int64   // of an image
	link  string
	major uint32
	minor uint32
	kids  map[string]*node
	uid   uint32 // owner; 0 is root
	made  bool   // CreateImage's mark
}

func newDir() *node { return &node{mode: fs.ModeDir | 0o755, kids: map[string]*node{}} }

func (n *node) fileSize() int64 {
	if n.image != nil {
		return n.size
	}
	return int64(len(n.data))
}

// vfs is an in-memory tree rooted at "/", symlinks resolved per component
// as the kernel does.
type vfs struct{ root *node }

func newVFS() *vfs { return &vfs{root: newDir()} }

func split(p string) []string {
	p = path.Clean("/" + p)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// resolve follows p to its node; follow says whether a final symlink is
// followed. It returns the node's resolved path too.
func (v *vfs) resolve(p string, follow bool) (*node, string, error) {
	return v.resolveDepth(p, follow, 0)
}

func (v *vfs) resolveDepth(p string, follow bool, depth int) (*node, string, error) {
	if depth > 40 {
		return nil, "", syscall.ELOOP
	}
	cur, curPath := v.root, "/"
	parts := split(p)
	for i, name := range parts {
		if cur.mode&fs.ModeDir == 0 {
			return nil, "", syscall.ENOTDIR
		}
		next, ok := cur.kids[name]
		if !ok {
			return nil, "", fs.ErrNotExist
		}
		nextPath := path.Join(curPath, name)
		last := i == len(parts)-1
		if next.mode&fs.ModeSymlink != 0 && (!last || follow) {
			target := next.link
			if !path.IsAbs(target) {
				target = path.Join(curPath, target)
			}
			n, rp, err := v.resolveDepth(target, true, depth+1)
			if err != nil {
				return nil, "", err
			}
			next, nextPath = n, rp
		}
		cur, curPath = next, nextPath
	}
	return cur, curPath, nil
}

// parent returns the directory that holds p, resolved, and p's base name.
func (v *vfs) parent(p string) (*node, string, error) {
	dir, base := path.Split(path.Clean("/" + p))
	d, _, err := v.resolve(dir, true)
	if err != nil {
		return nil, "", err
	}
	if d.mode&fs.ModeDir == 0 {
		return nil, "", syscall.ENOTDIR
	}
	return d, base, nil
}

func (v *vfs) mkdirAll(p string) (*node, error) {
	cur, curPath := v.root, "/"
	for _, name := range split(p) {
		next, ok := cur.kids[name]
		if !ok {
			next = newDir()
			cur.kids[name] = next
		}
		nextPath := path.Join(curPath, name)
		if next.mode&fs.ModeSymlink != 0 {
			n, rp, err := v.resolve(nextPath, true)
			if err != nil {
				return nil, err
			}
			next, nextPath = n, rp
		}
		if next.mode&fs.ModeDir == 0 {
			return nil, syscall.ENOTDIR
		}
		cur, curPath = next, nextPath
	}
	return cur, nil
}

// put places n at p, making the parent directories.
func (v *vfs) put(p string, n *node) {
	dir, base := path.Split(path.Clean(p))
	d, err := v.mkdirAll(dir)
	if err != nil {
		panic("hosttest: put " + p + ": " + err.Error())
	}
	d.kids[base] = n
}

func (v *vfs) remove(p string) error {
	d, base, err := v.parent(p)
	if err != nil {
		return err
	}
	n, ok := d.kids[base]
	if !ok {
		return fs.ErrNotExist
	}
	if n.mode&fs.ModeDir != 0 && len(n.kids) > 0 {
		return syscall.ENOTEMPTY
	}
	delete(d.kids, base)
	return nil
}

// removeAll drops p and everything under it, ignoring a missing p.
func (v *vfs) removeAll(p string) {
	if d, base, err := v.parent(p); err == nil {
		delete(d.kids, base)
	}
}

// fileInfo is the fs.FileInfo of a node.
type fileInfo struct {
	name string
	n    *node
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.n.fileSize() }
func (fi fileInfo) Mode() fs.FileMode  { return fi.n.mode }
func (fi fileInfo) ModTime() time.Time { return time.Time{} }
func (fi fileInfo) IsDir() bool        { return fi.n.mode.IsDir() }
func (fi fileInfo) Sys() any           { return &syscall.Stat_t{Uid: fi.n.uid, Mode: uint32(fi.n.mode.Perm())} }

type dirEntry struct{ fileInfo }

func (d dirEntry) Type() fs.FileMode          { return d.n.mode.Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return d.fileInfo, nil }

func (v *vfs) readDir(p string) ([]fs.DirEntry, error) {
	n, _, err := v.resolve(p, true)
	if err != nil {
		return nil, err
	}
	if n.mode&fs.ModeDir == 0 {
		return nil, syscall.ENOTDIR
	}
	names := make([]string, 0, len(n.kids))
	for k := range n.kids {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]fs.DirEntry, len(names))
	for i, k := range names {
		out[i] = dirEntry{fileInfo{name: k, n: n.kids[k]}}
	}
	return out, nil
}
