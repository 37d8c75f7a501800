package disk

import (
	"fmt"
	"strings"
	"unicode"
)

// How an option is written: a flag alone, with =VALUE, or either.
const (
	optFlag = 1 << iota
	optValue
	optEither = optFlag | optValue
)

// genericMountOptions are mount(8)'s file-system independent options that
// make sense for a data disk. bind, rbind, move, remount and loop are not
// among them: they make mount do something else than mount this file
// system here.
var genericMountOptions = map[string]int{
	"async": optFlag, "sync": optFlag, "dirsync": optFlag,
	"atime": optFlag, "noatime": optFlag, "diratime": optFlag, "nodiratime": optFlag,
	"relatime": optFlag, "norelatime": optFlag, "strictatime": optFlag, "nostrictatime": optFlag,
	"lazytime": optFlag, "nolazytime": optFlag,
	"auto": optFlag, "noauto": optFlag, "defaults": optFlag, "nofail": optFlag, "_netdev": optFlag,
	"dev": optFlag, "nodev": optFlag, "exec": optFlag, "noexec": optFlag, "suid": optFlag, "nosuid": optFlag,
	"nosymfollow": optFlag, "iversion": optFlag, "noiversion": optFlag, "mand": optFlag, "nomand": optFlag,
	"ro": optFlag, "rw": optFlag, "silent": optFlag, "loud": optFlag,
	"user": optFlag, "nouser": optFlag, "users": optFlag, "owner": optFlag, "group": optFlag,
	"context": optValue, "fscontext": optValue, "defcontext": optValue, "rootcontext": optValue,
	"comment": optValue,
}

// fsMountOptions are each file system's own options (xfs(5), ext4(5)).
var fsMountOptions = map[string]map[string]int{
	"xfs": {
		"allocsize": optValue, "attr2": optFlag, "noattr2": optFlag, "discard": optFlag, "nodiscard": optFlag,
		"grpid": optFlag, "bsdgroups": optFlag, "nogrpid": optFlag, "sysvgroups": optFlag,
		"filestreams": optFlag, "ikeep": optFlag, "noikeep": optFlag, "inode32": optFlag, "inode64": optFlag,
		"largeio": optFlag, "nolargeio": optFlag, "logbufs": optValue, "logbsize": optValue,
		"logdev": optValue, "rtdev": optValue, "noalign": optFlag, "norecovery": optFlag, "nouuid": optFlag,
		"noquota": optFlag, "uquota": optFlag, "usrquota": optFlag, "quota": optFlag, "uqnoenforce": optFlag,
		"qnoenforce": optFlag, "gquota": optFlag, "grpquota": optFlag, "gqnoenforce": optFlag,
		"pquota": optFlag, "prjquota": optFlag, "pqnoenforce": optFlag,
		"sunit": optValue, "swidth": optValue, "swalloc": optFlag, "wsync": optFlag, "dax": optEither,
	},
	"ext4": {
		"journal_dev": optValue, "journal_path": optValue, "norecovery": optFlag, "noload": optFlag,
		"data": optValue, "commit": optValue, "orlov": optFlag, "oldalloc": optFlag,
		"user_xattr": optFlag, "nouser_xattr": optFlag, "acl": optFlag, "noacl": optFlag,
		"bsddf": optFlag, "minixdf": optFlag, "debug": optFlag, "errors": optValue,
		"grpid": optFlag, "bsdgroups": optFlag, "nogrpid": optFlag, "sysvgroups": optFlag,
		"resgid": optValue, "resuid": optValue, "sb": optValue,
		"quota": optFlag, "noquota": optFlag, "usrquota": optFlag, "grpquota": optFlag, "prjquota": optFlag,
		"usrjquota": optValue, "grpjquota": optValue, "jqfmt": optValue,
		"journal_checksum": optFlag, "nojournal_checksum": optFlag, "journal_async_commit": optFlag,
		"barrier": optEither, "nobarrier": optFlag, "inode_readahead_blks": optValue, "stripe": optValue,
		"delalloc": optFlag, "nodelalloc": optFlag, "max_batch_time": optValue, "min_batch_time": optValue,
		"journal_ioprio": optValue, "auto_da_alloc": optEither, "noauto_da_alloc": optFlag,
		"noinit_itable": optFlag, "init_itable": optEither, "discard": optFlag, "nodiscard": optFlag,
		"block_validity": optFlag, "noblock_validity": optFlag, "dioread_lock": optFlag, "dioread_nolock": optFlag,
		"max_dir_size_kb": optValue, "i_version": optFlag, "nombcache": optFlag,
		"prefetch_block_bitmaps": optFlag, "no_prefetch_block_bitmaps": optFlag,
		"mb_optimize_scan": optValue, "dax": optEither, "inlinecrypt": optFlag,
	},
}

// notMounting are options that make mount(8) do something else than
// mount the new file system at its mount point.
var notMounting = map[string]string{
	"bind":    "mounts a directory, not the file system",
	"rbind":   "mounts a directory tree, not the file system",
	"move":    "moves an existing mount",
	"remount": "changes an existing mount",
	"loop":    "mounts a file through a loop device",
}

// CheckMountOptions checks opts, the comma separated options given for a
// file system of type fs (mount -o, the fstab line's fourth field): each
// must be one mount(8) or the file system takes, and written so the fstab
// line reads it back as given (no blanks, '#', quotes, backslashes or
// control characters, no empty element). The error names the option and
// why.
func CheckMountOptions(fs, opts string) error {
	if opts == "" {
		return nil
	}
	for _, r := range opts {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '#' || r == '"' || r == '\'' || r == '\\' || r > unicode.MaxASCII {
			return fmt.Errorf("mount options %q: %q cannot be written in an fstab line: use a comma separated list such as noatime,discard", opts, r)
		}
	}
	for _, o := range strings.Split(opts, ",") {
		if o == "" {
			return fmt.Errorf("mount options %q: an empty option (a comma too many): use a comma separated list such as noatime,discard", opts)
		}
		name, value, hasValue := strings.Cut(o, "=")
		if why, ok := notMounting[name]; ok {
			return fmt.Errorf("mount option %q is refused: it %s", o, why)
		}
		if strings.HasPrefix(name, "x-") || strings.HasPrefix(name, "X-") {
			continue // for userspace (systemd, mount helpers): not the kernel's
		}
		how, ok := genericMountOptions[name]
		if !ok {
			how, ok = fsMountOptions[fs][name]
		}
		switch {
		case !ok:
			return fmt.Errorf("mount option %q is not one mount(8) or %s takes", o, orNone(fs))
		case hasValue && how&optValue == 0:
			return fmt.Errorf("mount option %q takes no value", o)
		case !hasValue && how&optFlag == 0, hasValue && value == "":
			return fmt.Errorf("mount option %q needs a value (%s=VALUE)", o, name)
		}
	}
	return nil
}
