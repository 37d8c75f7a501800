package hwinfo

import (
	"regexp"
	"strconv"
	"strings"
)

// mdstatProgress is one array's sync line in proc/mdstat.
type mdstatProgress struct {
	action          string  // resync, recovery, reshape, check, repair
	percent         float64 // as the kernel prints it
	doneKiB, totKiB uint64
	speedKiB        uint64
}

// mdstatLine is "[==>....]  resync = 12.7% (33536/261120) finish=3.6min speed=1048K/sec":
// (done/total) in KiB of one member.
var mdstatLine = regexp.MustCompile(`\b(resync|recovery|reshape|check|repair)\s*=\s*([0-9.]+)%\s*\((\d+)/(\d+)\)(?:.*\bspeed=(\d+)K/sec)?`)

// readMdstat reads the progress lines of proc/mdstat by array. md's sysfs
// sync_completed only moves at checkpoints (every sixteenth of the array,
// or when a sync stops), so a resync under way reads "0 / N" there long
// after mdstat, which shows the kernel's live position, says 12%.
func (r *reader) readMdstat() map[string]mdstatProgress {
	s, ok := r.readString("/proc/mdstat")
	if !ok {
		return nil
	}
	out := map[string]mdstatProgress{}
	cur := ""
	for _, line := range strings.Split(s, "\n") {
		if name, _, ok := strings.Cut(line, " : "); ok && strings.HasPrefix(name, "md") && !strings.HasPrefix(line, " ") {
			cur = strings.TrimSpace(name)
			continue
		}
		if strings.TrimSpace(line) == "" {
			cur = ""
			continue
		}
		m := mdstatLine.FindStringSubmatch(line)
		if cur == "" || m == nil {
			continue
		}
		p := mdstatProgress{action: m[1]}
		p.percent, _ = strconv.ParseFloat(m[2], 64)
		p.doneKiB, _ = strconv.ParseUint(m[3], 10, 64)
		p.totKiB, _ = strconv.ParseUint(m[4], 10, 64)
		p.speedKiB, _ = strconv.ParseUint(m[5], 10, 64)
		out[cur] = p
	}
	return out
}
