package fakevendor

import (
	"strconv"
	"strings"
)

// expandRepeats writes out each "repeat N LINE" of a script as N lines,
// each %d in LINE replaced by its count (1…N). A script line's number in
// the stand-in's messages counts the lines written out.
func expandRepeats(script string) string {
	if !strings.Contains(script, "repeat ") {
		return script
	}
	var b strings.Builder
	for _, line := range strings.Split(script, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "repeat ")
		count, body, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(count)
		if !ok || err != nil || n < 0 || body == "" {
			b.WriteString(line + "\n")
			continue
		}
		for i := 1; i <= n; i++ {
			b.WriteString(strings.ReplaceAll(body, "%d", strconv.Itoa(i)) + "\n")
		}
	}
	return b.String()
}
