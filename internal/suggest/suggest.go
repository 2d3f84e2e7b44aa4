// Package suggest finds what a user probably meant by a name that is not
// one of the known ones: the "did you mean" of config keys, the command
// line's commands and flags, and the agency directory's columns and keys.
package suggest

import "strings"

// maxLen is the longest name compared: a longer one is not a typo of a
// key, a flag or a column, and comparing it would cost len(a)*len(b).
const maxLen = 64

// Closest returns the candidate closest to s, ignoring case and at most 2
// edits apart (the first of equals), or "" when none is.
func Closest(s string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes; more than
// 2 when either is longer than maxLen.
func editDistance(a, b string) int {
	if len(a) > maxLen || len(b) > maxLen {
		return maxLen
	}
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Hint returns "; did you mean X?" for Closest(s, candidates), or "": the
// tail of an "unknown key" or "unknown column" message.
func Hint(s string, candidates []string) string {
	if best := Closest(s, candidates); best != "" {
		return "; did you mean " + best + "?"
	}
	return ""
}
