package clock

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// The controller's clock and the host's are modelled on a true time: the
// host's reads true+offset; a sample's request takes out, the host takes
// its reading, then the reply takes back (the host's own work included).
func modelSample(t0 time.Time, offset, out, back time.Duration) Sample {
	read := t0.Add(out)
	return Sample{T0: t0, Host: read.Add(offset), T1: read.Add(back)}
}

var epoch = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// TestBestKnownOffsets: samples made from a known offset, symmetric or
// lopsided delays and random jitter give back the offset within the
// uncertainty they report, which is half the round trip of the sample
// used, and that sample is the one of the shortest round trip.
func TestBestKnownOffsets(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 3))
	jittered := func(offset time.Duration, n int) []Sample {
		var s []Sample
		for i := range n {
			out := 2*time.Millisecond + time.Duration(rng.Int64N(int64(30*time.Millisecond)))
			back := 2*time.Millisecond + time.Duration(rng.Int64N(int64(30*time.Millisecond)))
			s = append(s, modelSample(epoch.Add(time.Duration(i)*time.Second), offset, out, back))
		}
		return s
	}
	cases := []struct {
		name    string
		offset  time.Duration
		samples []Sample
		// exactErr is the estimate's error the model predicts: half the
		// difference of the delays of the sample used; jitter's is
		// only bounded.
		exactErr time.Duration
		bounded  bool
	}{
		{"symmetric, host ahead 5 s", 5 * time.Second, []Sample{
			modelSample(epoch, 5*time.Second, 10*time.Millisecond, 10*time.Millisecond),
			modelSample(epoch.Add(time.Second), 5*time.Second, time.Millisecond, time.Millisecond),
			modelSample(epoch.Add(2*time.Second), 5*time.Second, 50*time.Millisecond, 50*time.Millisecond),
		}, 0, false},
		{"symmetric, host behind 3.2 s", -3200 * time.Millisecond, []Sample{
			modelSample(epoch, -3200*time.Millisecond, 4*time.Millisecond, 4*time.Millisecond),
		}, 0, false},
		{"lopsided: slow request, quick reply", 5 * time.Second, []Sample{
			modelSample(epoch, 5*time.Second, 40*time.Millisecond, 2*time.Millisecond),
		}, 19 * time.Millisecond, false},
		{"lopsided: quick request, slow reply", -time.Second, []Sample{
			modelSample(epoch, -time.Second, time.Millisecond, 31*time.Millisecond),
		}, -15 * time.Millisecond, false},
		{"lopsided long trip beside a short symmetric one", 5 * time.Second, []Sample{
			modelSample(epoch, 5*time.Second, 400*time.Millisecond, 2*time.Millisecond),
			modelSample(epoch.Add(time.Second), 5*time.Second, 3*time.Millisecond, 3*time.Millisecond),
		}, 0, false},
		{"jitter, 8 samples", 5 * time.Second, jittered(5*time.Second, 8), 0, true},
		{"jitter, 32 samples, no offset", 0, jittered(0, 32), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Best(tc.samples)
			if err != nil {
				t.Fatal(err)
			}
			shortest := 0
			for i, s := range tc.samples {
				if s.RTT() < tc.samples[shortest].RTT() {
					shortest = i
				}
			}
			used := tc.samples[shortest]
			if e.Used != shortest+1 || e.RTT != used.RTT() || e.Uncertainty != used.RTT()/2 || e.Samples != len(tc.samples) {
				t.Errorf("estimate %+v, want sample %d of %d (rtt %v)", e, shortest+1, len(tc.samples), used.RTT())
			}
			errBy := e.Offset - tc.offset
			if abs(errBy) > e.Uncertainty {
				t.Errorf("offset %v, true %v: off by %v, beyond the uncertainty %v", e.Offset, tc.offset, errBy, e.Uncertainty)
			}
			if !tc.bounded && errBy != tc.exactErr {
				t.Errorf("offset %v, true %v: off by %v, the model says %v", e.Offset, tc.offset, errBy, tc.exactErr)
			}
		})
	}
}

// The fixture is text as a playbook writes it: the shortest round trip
// (line 3: 8 ms) gives a host 5.000 s ahead, within 4 ms.
func TestParseSamplesFixture(t *testing.T) {
	f, err := os.Open("testdata/samples-ssh.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseSamples(f)
	if err != nil || len(s) != 4 {
		t.Fatalf("%d samples, %v", len(s), err)
	}
	e, err := Best(s)
	if err != nil {
		t.Fatal(err)
	}
	if e.Used != 3 || e.RTT != 8*time.Millisecond || e.Offset != 5*time.Second || e.Uncertainty != 4*time.Millisecond {
		t.Errorf("estimate %+v", e)
	}
}

func TestParseUnixExact(t *testing.T) {
	for in, want := range map[string]time.Time{
		"1764756000.123456789":   time.Unix(1764756000, 123456789),
		"1764756000.1":           time.Unix(1764756000, 100000000),
		"1764756000":             time.Unix(1764756000, 0),
		"1764756000.12345678999": time.Unix(1764756000, 123456789),
	} {
		got, err := ParseUnix(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseUnix(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "12:00", "1.2.3", "1e9", ".5", "17647560001234.0"} {
		if _, err := ParseUnix(in); !errors.Is(err, ErrSamples) {
			t.Errorf("ParseUnix(%q): %v, want ErrSamples", in, err)
		}
	}
}

func TestParseSamplesBad(t *testing.T) {
	for in, msg := range map[string]string{
		"1 2\n":                 "line 1",
		"# c\n\n1 2 3\n1 2 x\n": "line 4",
		"1764756000 1 now\n":    `"now"`,
		"1 2 3 4\n":             "three Unix times",
	} {
		_, err := ParseSamples(strings.NewReader(in))
		if !errors.Is(err, ErrSamples) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want ErrSamples mentioning %s", in, err, msg)
		}
	}
	if _, err := Best(nil); !errors.Is(err, ErrSamples) {
		t.Errorf("no samples: %v", err)
	}
	back := []Sample{{T0: epoch, Host: epoch, T1: epoch.Add(-time.Millisecond)}}
	if _, err := Best(back); !errors.Is(err, ErrSamples) {
		t.Errorf("t1 before t0: %v", err)
	}
}
