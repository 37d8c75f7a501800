// Package suggest finds the name a user most likely meant when they typed
// one that does not exist (a flag, a command, a set, a format), for the
// "did you mean ...?" of an error.
package suggest

import "strings"

// Closest returns the candidate nearest to word, when one is near enough to
// be a typo of it: within an edit distance of about a third of its length
// (at least 1, at most 3; a swap of two letters counts as one edit), or one
// the word is a prefix of (a name cut short). Case is ignored. Ties go to
// the earlier candidate, so callers list the common names first.
func Closest(word string, candidates []string) (string, bool) {
	w := strings.ToLower(word)
	if len([]rune(w)) < 2 {
		return "", false // any letter is one edit from any other
	}
	best, bestD := "", 1<<30
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == w {
			return c, true
		}
		d := distance(w, lc)
		if strings.HasPrefix(lc, w) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	limit := min(max(len([]rune(w))/3, 1), 3)
	if best == "" || bestD > limit {
		return "", false
	}
	return best, true
}

// Hint is ": did you mean X?" for the closest candidate, with prefix put
// before it (such as "--"), or "" when none is close: it follows the
// quoted word of an error ("unknown workload set \"quik\": did you mean
// quick?").
func Hint(word string, candidates []string, prefix string) string {
	if c, ok := Closest(word, candidates); ok {
		return ": did you mean " + prefix + c + "?"
	}
	return ""
}

// distance is the optimal string alignment distance of a and b: insertions,
// deletions, substitutions and swaps of adjacent letters each cost one.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
