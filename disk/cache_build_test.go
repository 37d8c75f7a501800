package disk

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// FlushWriteCache asks dm-writecache itself to write everything back: one
// dmsetup message, its failure named with the device.
func TestFlushWriteCache(t *testing.T) {
	argv := []string{"dmsetup", "message", "/dev/mapper/cachebench-cachebench", "0", "flush"}
	r := &scriptedRunner{t: t, calls: []scriptedCall{{argv: argv}}}
	if err := FlushWriteCache(context.Background(), "/dev/mapper/cachebench-cachebench", Deps{Runner: r}); err != nil {
		t.Fatal(err)
	}
	r.done()
	failed := &RunError{Argv: argv, ExitCode: 1, Stderr: "device-mapper: message ioctl on cachebench-cachebench failed: Device or resource busy",
		Err: errors.New("exit status 1")}
	r = &scriptedRunner{t: t, calls: []scriptedCall{{argv: argv, err: failed}}}
	err := FlushWriteCache(context.Background(), "/dev/mapper/cachebench-cachebench", Deps{Runner: r})
	if !errors.Is(err, failed) || !strings.HasPrefix(err.Error(), "flush the write cache of /dev/mapper/cachebench-cachebench: ") {
		t.Errorf("err %v", err)
	}
	r.done()
}
