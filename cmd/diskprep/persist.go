package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/diskprep/diskprep/disk"
)

// warnImagePersist says, for a plan that persists a filesystem on an
// --image, that its fstab line mounts nothing after a reboot: the loop
// device is gone then (nofail keeps the boot going), until something
// attaches the image again. It offers the systemd unit that would. The
// line is still written: attaching the image by other means (a unit of the
// user's own, rc.local) is a fair choice, and refusing would break the
// scripted `prepare --image ... --persist --yes` that already works.
func warnImagePersist(w io.Writer, p *disk.Plan) {
	if p.Image == nil {
		return
	}
	var points []string
	for _, pp := range p.Partitions {
		if pp.Persist && pp.MountPoint != "" {
			points = append(points, pp.MountPoint)
		}
	}
	if len(points) == 0 {
		return
	}
	img := p.Image.Path
	if abs, err := filepath.Abs(img); err == nil {
		img = abs
	}
	name := "diskprep-loop-" + unitName(img) + ".service"
	sector := ""
	if p.Image.SectorBytes > 512 {
		sector = fmt.Sprintf(" --sector-size %d", p.Image.SectorBytes)
	}
	fmt.Fprintf(w, `warning: --persist on an image: the fstab line for %s mounts nothing after a reboot unless %s is attached to a loop device at boot (the loop device is gone then; nofail keeps the boot going). A unit that attaches it, to save as %s and enable with systemctl enable %s:
[Unit]
Description=Attach %s to a loop device for %s (diskprep)
DefaultDependencies=no
RequiresMountsFor=%s
Before=local-fs.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/sbin/losetup --find --partscan%s "%s"

[Install]
WantedBy=local-fs.target
`, strings.Join(points, ", "), img, shellWord("/etc/systemd/system/"+name), shellWord(name), img, strings.Join(points, ", "), filepath.Dir(img), sector, img)
}

// shellWord quotes s for a POSIX shell when it needs it: a unit name
// escapes "-" as \x2d, and unquoted the shell eats the backslash, so the
// command printed enabled a unit that does not exist.
func shellWord(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./@:+=,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// unitName makes a unit name part of a path as systemd-escape --path does
// for the common characters: "/var/tmp/x.img" -> "var-tmp-x.img".
func unitName(path string) string {
	var b strings.Builder
	for i, r := range strings.Trim(path, "/") {
		switch {
		case r == '/':
			b.WriteByte('-')
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.' && i > 0:
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, `\x%02x`, r)
		}
	}
	return b.String()
}
