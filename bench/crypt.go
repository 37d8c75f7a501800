package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/hwinfo"
)

// encryptionOf is the dm-crypt layer of stack (the target's, top first),
// with cryptsetup benchmark's figures for its cipher: nil when the stack
// has none or its header was not read.
func encryptionOf(ctx context.Context, run Runner, host *hwinfo.Host, stack []hwinfo.Layer) *record.Encryption {
	for _, l := range stack {
		if l.Kind != "crypt" {
			continue
		}
		c := host.CryptMapped(l.Name)
		if c == nil {
			return nil
		}
		e := &record.Encryption{Mapper: l.Name, LUKSVersion: c.Version, Cipher: c.Cipher, KeyBits: c.KeyBits, SectorBytes: c.SectorBytes, AES: host.CPU.AES}
		if run == nil {
			e.CipherNote = "cryptsetup benchmark not run"
			return e
		}
		out, err := run.Run(ctx, "cryptsetup", "benchmark", "--cipher", c.Cipher, "--key-size", strconv.Itoa(c.KeyBits))
		if err == nil {
			e.CipherEncryptMiBps, e.CipherDecryptMiBps, err = parseCipherBenchmark(string(out))
		}
		if err != nil {
			// cryptsetup says why on its first line that is not a comment
			// ("Cipher ... is not available."), better than its exit code.
			why := err.Error()
			for _, l := range strings.Split(string(out), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					why = l
					break
				}
			}
			e.CipherNote = "cryptsetup benchmark: " + firstLine(why)
		}
		return e
	}
	return nil
}

// parseCipherBenchmark reads `cryptsetup benchmark --cipher C --key-size
// K`'s one result line ("aes-xts 512b 2051.1 MiB/s 2045.3 MiB/s"):
// encryption, then decryption.
func parseCipherBenchmark(out string) (enc, dec float64, err error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 6 || strings.HasPrefix(f[0], "#") || f[3] != "MiB/s" || f[5] != "MiB/s" {
			continue
		}
		e, err1 := strconv.ParseFloat(f[2], 64)
		d, err2 := strconv.ParseFloat(f[4], 64)
		if err1 == nil && err2 == nil && e > 0 && d > 0 {
			return e, d, nil
		}
	}
	return 0, 0, fmt.Errorf("no figure in its output: %q", firstLine(strings.TrimSpace(out)))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
