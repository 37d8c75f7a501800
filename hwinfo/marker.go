package hwinfo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// MarkerFile is written by `diskprep prepare` into the root of each
// filesystem it makes and mounts; bench reads it to name the filesystem and
// its mkfs and mount options in a result record.
const MarkerFile = ".diskprep-prepared.json"

// MarkerSchema names the JSON shape of a Marker.
const MarkerSchema = "diskprep/prepared/v1"

// Marker is the content of MarkerFile.
type Marker struct {
	Schema      string   `json:"schema"`
	FS          string   `json:"fs"`
	Label       string   `json:"label,omitempty"`
	UUID        string   `json:"uuid"`
	Device      string   `json:"device"` // partition, e.g. /dev/sdb1
	Disk        string   `json:"disk"`   // whole disk, e.g. /dev/sdb
	Image       string   `json:"image,omitempty"`
	DiskModel   string   `json:"disk_model,omitempty"`
	DiskSerial  string   `json:"disk_serial,omitempty"`
	MkfsArgv    []string `json:"mkfs_argv"`
	MkfsVersion string   `json:"mkfs_version"`
	MountOpts   string   `json:"mount_opts,omitempty"`
	PreparedAt  string   `json:"prepared_at"`
	// MadeMountPoint: prepare created the mount point directory, so
	// release removes it once unmounted, when it is empty.
	MadeMountPoint bool `json:"made_mount_point,omitempty"`
}

// ReadMarker reads the marker of the filesystem mounted at dir. A missing
// marker is an error satisfying errors.Is(err, fs.ErrNotExist).
func ReadMarker(dir string) (*Marker, error) {
	path := filepath.Join(dir, MarkerFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &m, nil
}
