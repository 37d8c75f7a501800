package disk

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/diskprep/diskprep/disk/fstab"
)

// CrashEnv is a TEST-ONLY switch: the crash-safety tests set it to make a
// prepare run kill itself with SIGKILL at one named step, to prove that a
// crash anywhere leaves the host in a state a rerun repairs. Its value is a
// step name ("gpt-written"), or a step name and a delay ("mkfs+15ms"), in
// which case the step goes on and the kill lands that long after it began:
// inside mkfs, for instance, or at the latest at the next step, which
// waits for it. Unset (always, outside those tests) it costs
// one environment lookup and changes nothing.
//
// Steps, in the order Apply reaches them: image-created, loop-attaching
// (attached, not yet recorded), loop-attached,
// wiped, gpt-backup (go-diskfs has written the backup GPT, not yet the
// primary), gpt-written, partitions-registered, mkfs, formatted, mounted,
// fstab-parsed, fstab-backed-up, fstab-replaced.
const CrashEnv = "DISKPREP_TEST_CRASH_AT"

var crashSpec = sync.OnceValues(func() (step string, delay time.Duration) {
	// The one place the switch is read.
	v := os.Getenv(CrashEnv)
	if v == "" {
		return "", 0
	}
	step, d, ok := strings.Cut(v, "+")
	if ok {
		delay, _ = time.ParseDuration(d)
	}
	return step, delay
})

var hookFstab sync.Once

// crashArmed says whether a crash test is running at all; Apply asks first
// thing, which also reaches into fstab's edit steps.
func crashArmed() bool {
	step, _ := crashSpec()
	if step == "" {
		return false
	}
	hookFstab.Do(func() { fstab.SetStepHook(func(s string) { crashPoint("fstab-" + s) }) })
	return true
}

// killPending is set once a delayed kill is on its way.
var killPending atomic.Bool

// crashPoint kills the process at step when a crash test asks for it.
func crashPoint(step string) {
	if killPending.Load() {
		// A delayed kill must land within its step, however fast the
		// step was: the next step waits for it.
		select {}
	}
	at, delay := crashSpec()
	if at != step {
		return
	}
	if delay <= 0 {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	killPending.Store(true)
	time.AfterFunc(delay, func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
}
