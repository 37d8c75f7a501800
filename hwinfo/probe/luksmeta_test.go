package probe

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

func readLUKSFile(t *testing.T, path string) (*LUKS, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return ReadLUKS(f, st.Size())
}

// luksDumpLUKS2 is what cryptsetup says of a LUKS2 header, from its JSON
// metadata and its text dump (UUID, label).
func luksDumpLUKS2(t *testing.T, img string) LUKS {
	t.Helper()
	out, err := exec.Command("cryptsetup", "luksDump", "--dump-json-metadata", img).Output()
	if err != nil {
		t.Fatalf("luksDump --dump-json-metadata: %v", err)
	}
	var j struct {
		Keyslots map[string]struct {
			KeySize int `json:"key_size"`
		}
		Segments map[string]struct {
			Offset     string
			Encryption string
			SectorSize int `json:"sector_size"`
		}
		Tokens map[string]struct{ Type string }
	}
	if err := json.Unmarshal(out, &j); err != nil {
		t.Fatalf("luksDump JSON: %v\n%s", err, out)
	}
	l := LUKS{Version: 2, Cipher: j.Segments["0"].Encryption, SectorBytes: j.Segments["0"].SectorSize, KeyBits: j.Keyslots["0"].KeySize * 8}
	l.DataOffsetBytes, _ = strconv.ParseUint(j.Segments["0"].Offset, 10, 64)
	for _, tk := range j.Tokens {
		l.Tokens = append(l.Tokens, tk.Type)
	}
	slices.Sort(l.Tokens)
	text := luksDumpText(t, img)
	l.UUID = text["UUID"]
	if lab := text["Label"]; lab != "(no label)" {
		l.Label = lab
	}
	return l
}

// luksDumpText is luksDump's "Key: value" lines.
func luksDumpText(t *testing.T, img string) map[string]string {
	t.Helper()
	out, err := exec.Command("cryptsetup", "luksDump", img).Output()
	if err != nil {
		t.Fatalf("luksDump: %v", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(k, "\t") && !strings.HasPrefix(k, " ") {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

func TestReadLUKSAgreesWithCryptsetup(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		tokens []string // token types imported after luksFormat
	}{
		{"luks2 defaults", []string{"--type", "luks2", "--pbkdf", "pbkdf2"}, nil},
		{"luks2 512-byte sectors, AES-128", []string{"--type", "luks2", "--pbkdf", "pbkdf2", "--sector-size", "512", "--key-size", "256"}, nil},
		{"luks2 label, 64 KiB metadata", []string{"--type", "luks2", "--pbkdf", "pbkdf2", "--label", "data disk", "--luks2-metadata-size", "64k"}, nil},
		{"luks2 4 MiB metadata, over a probe's 1 MiB read", []string{"--type", "luks2", "--pbkdf", "pbkdf2", "--luks2-metadata-size", "4m"}, nil},
		{"luks2 aes-cbc-essiv", []string{"--type", "luks2", "--pbkdf", "pbkdf2", "--cipher", "aes-cbc-essiv:sha256", "--key-size", "256"}, nil},
		{"luks2 sha512 checksum", []string{"--type", "luks2", "--pbkdf", "pbkdf2", "--hash", "sha512"}, nil},
		{"luks2 with two tokens", []string{"--type", "luks2", "--pbkdf", "pbkdf2"}, []string{"diskprep-test-b", "diskprep-test-a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			img := testenv.LUKSFormat(t, 32<<20, c.args...)
			for _, tk := range c.tokens {
				cmd := exec.Command("cryptsetup", "token", "import", img)
				cmd.Stdin = strings.NewReader(`{"type":"` + tk + `","keyslots":["0"]}`)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("cryptsetup token import: %v\n%s", err, out)
				}
			}
			got, err := readLUKSFile(t, img)
			if err != nil {
				t.Fatal(err)
			}
			if want := luksDumpLUKS2(t, img); !reflect.DeepEqual(*got, want) {
				t.Errorf("ReadLUKS: %+v\ncryptsetup: %+v", *got, want)
			}
		})
	}
	t.Run("luks1", func(t *testing.T) {
		img := testenv.LUKSFormat(t, 8<<20, "--type", "luks1", "--cipher", "aes-cbc-essiv:sha256", "--key-size", "256")
		got, err := readLUKSFile(t, img)
		if err != nil {
			t.Fatal(err)
		}
		d := luksDumpText(t, img)
		off, _ := strconv.ParseUint(d["Payload offset"], 10, 64)
		bits, _ := strconv.Atoi(d["MK bits"])
		want := LUKS{Version: 1, UUID: d["UUID"], Cipher: d["Cipher name"] + "-" + d["Cipher mode"], KeyBits: bits, SectorBytes: 512, DataOffsetBytes: off * 512}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("ReadLUKS: %+v\ncryptsetup: %+v", *got, want)
		}
	})
}

// A LUKS2 primary header damaged (its JSON changed, its checksum left) is
// passed over for the secondary copy, as cryptsetup does; both damaged is
// an error naming the checksum; a blank device is ErrNoLUKS.
func TestReadLUKSDamagedHeaders(t *testing.T) {
	img := testenv.LUKSFormat(t, 32<<20, "--type", "luks2", "--pbkdf", "pbkdf2")
	want, err := readLUKSFile(t, img)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	second := int64(be64(b[8:])) // the secondary follows the primary's area
	flip := func(off int64) {
		i := off + 4096 + int64(regexp.MustCompile(`"keyslots"`).FindIndex(b[off+4096:])[0]) + 1
		b[i] ^= 0x20 // "keyslots" -> "Keyslots"
		if err := os.WriteFile(img, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	flip(0)
	got, err := readLUKSFile(t, img)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("primary damaged: %+v, %v; want the secondary's %+v", got, err, *want)
	}
	flip(second)
	if _, err := readLUKSFile(t, img); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("both damaged: %v, want a checksum mismatch", err)
	}
	blank := filepath.Join(t.TempDir(), "blank")
	if err := os.WriteFile(blank, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readLUKSFile(t, blank); !errors.Is(err, ErrNoLUKS) {
		t.Errorf("a blank device: %v, want ErrNoLUKS", err)
	}
}
