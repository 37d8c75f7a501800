package disk

import (
	"fmt"
	"io"
	"strings"

	"github.com/diskprep/diskprep/hwinfo"
)

// ResultSchema names the JSON shape of a Result.
const ResultSchema = "diskprep/prepare/v1"

// MarkerFile is written into the root of each filesystem diskprep makes and
// mounts (see hwinfo.Marker, which bench reads too).
const MarkerFile = hwinfo.MarkerFile

// MarkerSchema names the JSON shape of a Marker.
const MarkerSchema = hwinfo.MarkerSchema

// Result is what Apply did.
type Result struct {
	Schema string `json:"schema"`
	Device string `json:"device"`
	Image  string `json:"image,omitempty"`
	// LoopAttached: diskprep attached Image to Device in this run.
	LoopAttached bool         `json:"loop_attached,omitempty"`
	TableWritten bool         `json:"table_written"`
	Wiped        []string     `json:"wiped,omitempty"` // signatures erased: "xfs at 0"
	Partitions   []PartResult `json:"partitions"`
	// Changed is false when the disk was already prepared as asked.
	Changed bool     `json:"changed"`
	Notes   []string `json:"notes,omitempty"`
}

// PartResult is one partition after Apply.
type PartResult struct {
	Number     int    `json:"number"`
	Device     string `json:"device"`
	StartBytes uint64 `json:"start_bytes"`
	SizeBytes  uint64 `json:"size_bytes"`
	PartUUID   string `json:"part_uuid"`
	FS         string `json:"fs"`
	// Use is the stack the partition was given to (raid:NAME, lvm:VG).
	Use   string `json:"use,omitempty"`
	Label string `json:"label,omitempty"`
	// Discarded: its blocks were discarded (TRIM) before use.
	Discarded bool     `json:"discarded,omitempty"`
	Notes     []string `json:"notes,omitempty"`
	// UUID is read back from the device after mkfs, not taken from the plan.
	UUID        string   `json:"uuid"`
	Formatted   bool     `json:"formatted"`
	MkfsArgv    []string `json:"mkfs_argv,omitempty"`
	MkfsVersion string   `json:"mkfs_version,omitempty"`
	MountPoint  string   `json:"mount_point,omitempty"`
	MountOpts   string   `json:"mount_opts,omitempty"`
	Mounted     bool     `json:"mounted"` // mounted by this run
	FstabLine   string   `json:"fstab_line,omitempty"`
	FstabAdded  bool     `json:"fstab_added,omitempty"`
}

// Marker is the content of MarkerFile.
type Marker = hwinfo.Marker

// ReadMarker reads the marker of the filesystem mounted at dir.
func ReadMarker(dir string) (*Marker, error) { return hwinfo.ReadMarker(dir) }

// WriteText renders the result for people.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	if !r.Changed {
		fmt.Fprintf(&b, "%s is already prepared as asked: nothing changed\n", r.Device)
	} else {
		fmt.Fprintf(&b, "Prepared %s\n", r.Device)
	}
	if r.Image != "" {
		how := "attached"
		if r.LoopAttached {
			how = "attached now"
		}
		fmt.Fprintf(&b, "  image %s (%s to %s; `diskprep release` detaches it)\n", r.Image, how, r.Device)
	}
	if len(r.Wiped) > 0 {
		fmt.Fprintf(&b, "  wiped: %s\n", strings.Join(r.Wiped, ", "))
	}
	for _, p := range r.Partitions {
		if p.Use != "" {
			fmt.Fprintf(&b, "  %s: member of %s\n", p.Device, p.Use)
			continue
		}
		fmt.Fprintf(&b, "  %s: %s", p.Device, p.FS)
		if p.Label != "" {
			fmt.Fprintf(&b, " label %q", p.Label)
		}
		fmt.Fprintf(&b, " UUID=%s\n", p.UUID)
		if p.Formatted {
			fmt.Fprintf(&b, "    made with: %s (%s)\n", QuoteArgv(p.MkfsArgv), p.MkfsVersion)
		}
		if p.FS == "swap" {
			state := "active"
			if p.Mounted {
				state = "activated now"
			}
			fmt.Fprintf(&b, "    swap %s\n", state)
		}
		if p.MountPoint != "" {
			opts := p.MountOpts
			if opts == "" {
				opts = "defaults"
			}
			fmt.Fprintf(&b, "    mounted at %s (%s)\n", p.MountPoint, opts)
		}
		if p.FstabLine != "" {
			state := "already present"
			if p.FstabAdded {
				state = "added"
			}
			fmt.Fprintf(&b, "    fstab (%s): %s\n", state, p.FstabLine)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
