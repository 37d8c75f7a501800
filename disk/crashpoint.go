package disk

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/diskprep/diskprep/disk/fstab"
)

// CrashEnv is a TEST-ONLY switch: the crash-safety tests set it to make a
// prepare run kill itself with SIGKILL at one named step, to prove that a
// crash anywhere leaves the host in a state a rerun repairs. Its value is a
// step name ("gpt-written"), or a step name and a delay ("mkfs+15ms"), in
// which case the step goes on and the kill lands that long after it began:
// inside mkfs, for instance. Unset (always, outside those tests) it costs
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

// crashPoint kills the process at step when a crash test asks for it.
func crashPoint(step string) {
	at, delay := crashSpec()
	if at != step {
		return
	}
	if delay <= 0 {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	time.AfterFunc(delay, func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
}
