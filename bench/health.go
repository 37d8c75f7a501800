package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench/record"
)

// Runner runs one external program and returns its output (stdout, then
// stderr): the project's one runner, disk.ExecRunner, which cmd passes.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// HealthTempRiseC is the temperature rise during a run that is warned
// about: a drive that hot may have throttled its later workloads.
const HealthTempRiseC = 10

// smartctlArgs reads everything smartctl knows of a device, as JSON.
func smartctlArgs(dev string) []string { return []string{"-j", "-a", dev} }

// readHealth takes one smartctl reading of dev. A failure is the note
// saying why (no smartctl, a device without SMART), never an error: the
// run goes on without health.
func readHealth(ctx context.Context, run Runner, dev string, now time.Time) (*record.HealthReading, string, string) {
	out, err := run.Run(ctx, "smartctl", smartctlArgs(dev)...)
	if errors.Is(err, exec.ErrNotFound) {
		return nil, "", "not read: smartctl not found (install smartmontools to record the disk's temperature, wear and error counters)"
	}
	r, tool, perr := ParseSmartctl(out)
	if perr != nil {
		why := perr.Error()
		if err != nil && r == nil && strings.HasPrefix(why, "smartctl output") {
			why = err.Error()
		}
		return nil, tool, "not read: " + why
	}
	r.Time = now.UTC().Truncate(time.Second)
	return r, tool, ""
}

// smartJSON is the part of smartctl's JSON (json_format_version 1) a
// reading keeps.
type smartJSON struct {
	Smartctl struct {
		Version  []int `json:"version"`
		Messages []struct {
			String   string `json:"string"`
			Severity string `json:"severity"`
		} `json:"messages"`
		ExitStatus int `json:"exit_status"`
	} `json:"smartctl"`
	Device *struct {
		Name     string `json:"name"`
		Protocol string `json:"protocol"`
	} `json:"device"`
	SmartStatus *struct {
		Passed *bool `json:"passed"`
	} `json:"smart_status"`
	Temperature *struct {
		Current *float64 `json:"current"`
	} `json:"temperature"`
	PowerOnTime *struct {
		Hours *uint64 `json:"hours"`
	} `json:"power_on_time"`
	NVMe *struct {
		CriticalWarning  *uint64  `json:"critical_warning"`
		Temperature      *float64 `json:"temperature"`
		PercentageUsed   *float64 `json:"percentage_used"`
		PowerOnHours     *uint64  `json:"power_on_hours"`
		MediaErrors      *uint64  `json:"media_errors"`
		WarningTempTime  *uint64  `json:"warning_temp_time"`
		CriticalCompTime *uint64  `json:"critical_comp_time"`
	} `json:"nvme_smart_health_information_log"`
	ATA *struct {
		Table []struct {
			ID    int    `json:"id"`
			Name  string `json:"name"`
			Value int    `json:"value"`
			Raw   struct {
				Value uint64 `json:"value"`
			} `json:"raw"`
		} `json:"table"`
	} `json:"ata_smart_attributes"`
}

// NVMe critical_warning bit 1: a temperature above a threshold.
const nvmeWarnTemperature = 1 << 1

// ATA wear attributes whose normalized value counts down from 100 as the
// flash wears: Samsung 177 Wear_Leveling_Count, 231 SSD_Life_Left, Intel
// 233 Media_Wearout_Indicator, Micron/Crucial 202 Percent_Lifetime_Remain,
// 173 Wear_Leveling_Count (several vendors).
var ataWearIDs = []int{177, 231, 233, 202, 173}

// ParseSmartctl reads one `smartctl -j -a` output (stdout; a stderr tail
// after the JSON document is ignored). tool is "smartctl 7.3". An output
// without a reading (smartctl could not open or identify the device) is an
// error carrying smartctl's own message.
func ParseSmartctl(out []byte) (r *record.HealthReading, tool string, err error) {
	var j smartJSON
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&j); err != nil {
		return nil, "", fmt.Errorf("smartctl output is not its JSON: %w", err)
	}
	if v := j.Smartctl.Version; len(v) >= 2 {
		tool = fmt.Sprintf("smartctl %d.%d", v[0], v[1])
	}
	// Exit status bits 0 and 1: the command line or the device open
	// failed; nothing was read. Bits 2–7 still come with data.
	if j.Smartctl.ExitStatus&0b11 != 0 || j.Device == nil {
		var msgs []string
		for _, m := range j.Smartctl.Messages {
			msgs = append(msgs, m.String)
		}
		if len(msgs) == 0 {
			msgs = []string{fmt.Sprintf("smartctl exit status %d", j.Smartctl.ExitStatus)}
		}
		return nil, tool, errors.New(strings.Join(msgs, "; "))
	}
	r = &record.HealthReading{Protocol: j.Device.Protocol}
	if j.SmartStatus != nil {
		r.PassedSelfTest = j.SmartStatus.Passed
	}
	if j.Temperature != nil {
		r.TemperatureC = j.Temperature.Current
	}
	if j.PowerOnTime != nil {
		r.PowerOnHours = j.PowerOnTime.Hours
	}
	if n := j.NVMe; n != nil {
		if r.TemperatureC == nil {
			r.TemperatureC = n.Temperature
		}
		if r.PowerOnHours == nil {
			r.PowerOnHours = n.PowerOnHours
		}
		r.PercentUsed, r.MediaErrors = n.PercentageUsed, n.MediaErrors
		if n.WarningTempTime != nil || n.CriticalCompTime != nil {
			m := deref(n.WarningTempTime) + deref(n.CriticalCompTime)
			r.ThrottleMinutes = &m
		}
		r.Throttled = n.CriticalWarning != nil && *n.CriticalWarning&nvmeWarnTemperature != 0
	}
	if a := j.ATA; a != nil {
		attr := map[int]int{}
		for i, t := range a.Table {
			attr[t.ID] = i
		}
		raw := func(id int) (uint64, bool) {
			i, ok := attr[id]
			if !ok {
				return 0, false
			}
			return a.Table[i].Raw.Value, true
		}
		for _, id := range ataWearIDs {
			if i, ok := attr[id]; ok && a.Table[i].Value <= 100 {
				used := float64(100 - a.Table[i].Value)
				r.PercentUsed = &used
				break
			}
		}
		// Reallocated, pending and offline-uncorrectable sectors: the
		// media's own errors.
		var media uint64
		seen := false
		for _, id := range []int{5, 197, 198} {
			if v, ok := raw(id); ok {
				media += v & 0xffffffff // vendors pack more into the high bytes
				seen = true
			}
		}
		if seen {
			r.MediaErrors = &media
		}
		if v, ok := raw(199); ok {
			v &= 0xffffffff
			r.CRCErrors = &v
		}
	}
	return r, tool, nil
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// startHealth takes the reading before the run; nil when there is no
// runner or no disk under the target to ask about, or a device made in
// software, which has no SMART to read.
func startHealth(ctx context.Context, run Runner, devPath string, now time.Time) *record.Health {
	if run == nil || devPath == "" || softwareDevice(devPath) {
		return nil
	}
	h := &record.Health{Device: devPath}
	h.Before, h.Tool, h.Note = readHealth(ctx, run, devPath, now)
	return h
}

// softwareDevice is a block device the kernel makes in software (a loop
// device, zram, a RAM disk, nbd, md, device-mapper): "device health: not
// read: /dev/loop0: Unable to detect device type" on every loop record
// said nothing worth a line.
func softwareDevice(devPath string) bool {
	name := devPath[strings.LastIndexByte(devPath, '/')+1:]
	for _, p := range []string{"loop", "zram", "ram", "nbd", "md", "dm-"} {
		if rest, ok := strings.CutPrefix(name, p); ok && rest != "" && (p == "dm-" || rest[0] >= '0' && rest[0] <= '9') {
			return true
		}
	}
	return false
}

// finishHealth takes the reading after the run (when the first one
// worked) and returns the warnings the two readings give.
func finishHealth(ctx context.Context, run Runner, h *record.Health, now time.Time) []string {
	if h == nil || h.Before == nil {
		return nil
	}
	var note string
	h.After, _, note = readHealth(ctx, run, h.Device, now)
	if h.After == nil {
		h.Note = "after the run " + note
	}
	return healthWarnings(h)
}

// healthWarnings compare the readings before and after a run.
func healthWarnings(h *record.Health) []string {
	b, a := h.Before, h.After
	if b == nil || a == nil {
		return nil
	}
	var out []string
	if b.TemperatureC != nil && a.TemperatureC != nil && *a.TemperatureC-*b.TemperatureC > HealthTempRiseC {
		out = append(out, fmt.Sprintf("%s warmed from %.0f to %.0f °C during the run (more than %d °C): later workloads may have run throttled", h.Device, *b.TemperatureC, *a.TemperatureC, HealthTempRiseC))
	}
	switch {
	case a.Throttled:
		out = append(out, fmt.Sprintf("%s reports a temperature above its threshold (critical warning): its numbers may be throttled ones", h.Device))
	case b.ThrottleMinutes != nil && a.ThrottleMinutes != nil && *a.ThrottleMinutes > *b.ThrottleMinutes:
		out = append(out, fmt.Sprintf("%s spent %d minutes over its warning or critical temperature during the run: its numbers may be throttled ones", h.Device, *a.ThrottleMinutes-*b.ThrottleMinutes))
	}
	grew := func(what string, x, y *uint64, hint string) {
		if x != nil && y != nil && *y > *x {
			out = append(out, fmt.Sprintf("%s: %s grew from %d to %d during the run%s", h.Device, what, *x, *y, hint))
		}
	}
	grew("media errors", b.MediaErrors, a.MediaErrors, ": the disk is failing; its numbers include retries")
	grew("CRC errors", b.CRCErrors, a.CRCErrors, ": a cable or connector corrupts transfers, which are retried")
	return out
}
