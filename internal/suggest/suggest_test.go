package suggest

import "testing"

func TestClosest(t *testing.T) {
	flags := []string{"fs", "label", "mount", "mount-opt", "persist", "partition-size", "wipe", "dry-run", "yes", "image", "size"}
	cases := []struct {
		word, want string
		ok         bool
	}{
		{"mout", "mount", true},
		{"persits", "persist", true}, // swapped letters
		{"dryrun", "dry-run", true},
		{"partition", "partition-size", true}, // cut short
		{"LABEL", "label", true},
		{"frobnicate", "", false},
		{"x", "", false},
		{"y", "", false}, // one letter is no basis for a guess
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := Closest(c.word, flags)
		if got != c.want || ok != c.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", c.word, got, ok, c.want, c.ok)
		}
	}
	if got := Hint("quik", []string{"fileserver", "cdm", "nvme", "video", "quick"}, ""); got != ": did you mean quick?" {
		t.Errorf("Hint = %q", got)
	}
	if got := Hint("mout", flags, "--"); got != ": did you mean --mount?" {
		t.Errorf("Hint = %q", got)
	}
	if got := Hint("zzzz", flags, "--"); got != "" {
		t.Errorf("Hint = %q, want none", got)
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"mout", "mount", 1}, {"ab", "ba", 1}, {"kitten", "sitting", 3}} {
		if got := distance(c.a, c.b); got != c.d {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
