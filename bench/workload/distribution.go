package workload

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Dist is a parsed access distribution (the engine's, without importing it).
type Dist struct {
	Kind  string // "" (uniform), "zipf" or "zoned"
	Theta float64
	Zones [][2]float64 // access percent, size percent
}

// ParseDistribution reads fio's random_distribution syntax: "random" or
// "" (uniform), "zipf:THETA" (THETA above 0: 1.2, 0.99), "zoned:A/S:A/S..."
// (A percent of the I/O to the next S percent of the data, each summing to
// 100). fio's pareto, normal and zoned_abs are not supported.
func ParseDistribution(v string) (Dist, error) {
	switch {
	case v == "" || v == "random":
		return Dist{}, nil
	case strings.HasPrefix(v, "zipf:"):
		th, err := strconv.ParseFloat(strings.TrimPrefix(v, "zipf:"), 64)
		if err != nil || !(th > 0) || th > 100 || math.IsInf(th, 0) {
			return Dist{}, errors.New("zipf:THETA wants THETA a number above 0 (zipf:1.2)")
		}
		return Dist{Kind: "zipf", Theta: th}, nil
	case strings.HasPrefix(v, "zoned:"):
		var d Dist
		d.Kind = "zoned"
		var acc, size float64
		for _, z := range strings.Split(strings.TrimPrefix(v, "zoned:"), ":") {
			a, s, ok := strings.Cut(z, "/")
			ap, err1 := strconv.ParseFloat(a, 64)
			sp, err2 := strconv.ParseFloat(s, 64)
			if !ok || err1 != nil || err2 != nil || ap < 0 || sp <= 0 || math.IsInf(ap, 0) || math.IsInf(sp, 0) {
				return Dist{}, fmt.Errorf("zone %q: want ACCESS/SIZE percentages (90/10)", z)
			}
			acc += ap
			size += sp
			d.Zones = append(d.Zones, [2]float64{ap, sp})
		}
		if math.Abs(acc-100) > 0.01 || math.Abs(size-100) > 0.01 {
			return Dist{}, fmt.Errorf("zones add up to %g%% of the I/O over %g%% of the data, want 100 and 100", acc, size)
		}
		return d, nil
	}
	return Dist{}, errors.New("want random, zipf:THETA or zoned:ACCESS/SIZE:... (fio's random_distribution)")
}

// CanonicalDistribution parses v and spells it one way, so that the same
// distribution is the same workload identity: "" for uniform, "zipf:1.2",
// "zoned:90/10:10/90".
func CanonicalDistribution(v string) (string, error) {
	d, err := ParseDistribution(v)
	if err != nil {
		return "", err
	}
	switch d.Kind {
	case "zipf":
		return "zipf:" + strconv.FormatFloat(d.Theta, 'g', -1, 64), nil
	case "zoned":
		parts := make([]string, len(d.Zones))
		for i, z := range d.Zones {
			parts[i] = strconv.FormatFloat(z[0], 'g', -1, 64) + "/" + strconv.FormatFloat(z[1], 'g', -1, 64)
		}
		return "zoned:" + strings.Join(parts, ":"), nil
	}
	return "", nil
}
