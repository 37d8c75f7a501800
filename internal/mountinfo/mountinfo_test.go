package mountinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	data := "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n" +
		"not a mount line\n" +
		"30 22 7:1 / /mnt/my\\040disk rw,noatime shared:5 - xfs /dev/loop0p1 rw,attr2\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := Read(path)
	if err != nil || len(es) != 2 {
		t.Fatalf("Read = %+v, %v", es, err)
	}
	want := Entry{MajMin: "7:1", Point: "/mnt/my disk", FSType: "xfs", Source: "/dev/loop0p1", MountOptions: "rw,noatime", SuperOptions: "rw,attr2"}
	if es[1] != want {
		t.Errorf("entry %+v, want %+v", es[1], want)
	}
	if _, bad := Parse(data); bad != 1 {
		t.Errorf("%d bad lines, want 1", bad)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	if got := Unescape(`a\134b\011c\040`); got != "a\\b\tc " {
		t.Errorf("Unescape = %q", got)
	}
}
