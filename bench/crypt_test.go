package bench

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/hwinfo"
)

// cipherRunner answers cryptsetup benchmark with out and err, and keeps
// the argv it was given.
type cipherRunner struct {
	out  string
	err  error
	argv []string
}

func (r *cipherRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	r.argv = append([]string{name}, args...)
	return []byte(r.out), r.err
}

func TestEncryptionOf(t *testing.T) {
	aes := true
	host := &hwinfo.Host{CPU: hwinfo.CPU{AES: &aes}, Disks: []hwinfo.Disk{{Name: "sdb", Partitions: []hwinfo.Partition{{Name: "sdb1",
		Crypt: &hwinfo.Crypt{Version: 2, Cipher: "aes-xts-plain64", KeyBits: 512, SectorBytes: 4096, Open: true, Mapper: "/dev/mapper/sdb1_crypt"}}}}}}
	stack := []hwinfo.Layer{{Kind: "crypt", Device: "dm-0", Name: "sdb1_crypt", On: []string{"sdb1"}}}
	run := &cipherRunner{out: "# Tests are approximate using memory only (no storage IO).\n#     Algorithm |       Key |      Encryption |      Decryption\n        aes-xts        512b      2051.1 MiB/s      1998.4 MiB/s\n"}
	e := encryptionOf(context.Background(), run, host, stack)
	if e == nil || e.Mapper != "sdb1_crypt" || e.Cipher != "aes-xts-plain64" || e.KeyBits != 512 || e.SectorBytes != 4096 || e.LUKSVersion != 2 ||
		e.AES == nil || !*e.AES || e.CipherEncryptMiBps != 2051.1 || e.CipherDecryptMiBps != 1998.4 || e.CipherNote != "" {
		t.Errorf("encryption %+v", e)
	}
	if got := strings.Join(run.argv, " "); got != "cryptsetup benchmark --cipher aes-xts-plain64 --key-size 512" {
		t.Errorf("argv %q", got)
	}
	// A kernel without its crypto API: the header's facts, and why there
	// is no figure, in cryptsetup's words.
	run = &cipherRunner{out: "# Tests are approximate using memory only (no storage IO).\nCipher aes-xts-plain64 (with 512 bits key) is not available.\n", err: errors.New("exit status 1")}
	if e := encryptionOf(context.Background(), run, host, stack); e == nil || e.CipherEncryptMiBps != 0 || e.Cipher != "aes-xts-plain64" ||
		e.CipherNote != "cryptsetup benchmark: Cipher aes-xts-plain64 (with 512 bits key) is not available." {
		t.Errorf("no crypto API: %+v", e)
	}
	// No crypt layer, or one whose header was not read: nothing.
	if e := encryptionOf(context.Background(), run, host, []hwinfo.Layer{{Kind: "md", Device: "md0"}}); e != nil {
		t.Errorf("md alone: %+v", e)
	}
	if e := encryptionOf(context.Background(), run, host, []hwinfo.Layer{{Kind: "crypt", Device: "dm-1", Name: "other"}}); e != nil {
		t.Errorf("unknown mapping: %+v", e)
	}
}
