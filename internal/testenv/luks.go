package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// LUKSFormat makes an image of size bytes in a temporary directory and
// formats it with cryptsetup luksFormat and args, with a key file and a
// fast PBKDF (what a header says of the volume does not depend on them),
// and returns its path. cryptsetup writes a file's header without
// device-mapper, so this needs neither root nor a loop device.
func LUKSFormat(t testing.TB, size int64, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("cryptsetup"); err != nil {
		SkipOrFail(t, "cryptsetup not installed (scripts/test.sh installs it)")
	}
	dir := t.TempDir()
	img, key := filepath.Join(dir, "luks.img"), filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o400); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"luksFormat", "--batch-mode", "--key-file", key, "--pbkdf-force-iterations", "1000"}, args...)
	if out, err := exec.Command("cryptsetup", append(argv, img)...).CombinedOutput(); err != nil {
		t.Fatalf("cryptsetup %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return img
}
