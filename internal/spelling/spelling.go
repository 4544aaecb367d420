// Package spelling measures how far apart two short names are, so that a
// refusal or a test can say "did you mean" of a near miss rather than only
// that a name is unknown.
package spelling

// Distance is the Levenshtein distance between a and b, counted in bytes:
// the names it compares (tool names, codes, flags) are ASCII.
func Distance(a, b string) int {
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
