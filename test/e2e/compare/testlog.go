package compare

import "strings"

// SkipReason says whether test skipped in a verbose test log, and why: the last line the test
// logged (its t.Skip message, without the file:line prefix).
func SkipReason(log, test string) (string, bool) {
	if !strings.Contains(log, "--- SKIP: "+test+" (") {
		return "", false
	}
	_, output, _ := strings.Cut(log, "=== RUN   "+test+"\n")
	reason := ""
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "=== ") || strings.HasPrefix(line, "--- ") {
			break
		}
		if _, message, ok := strings.Cut(line, ": "); ok {
			reason = message
		}
	}
	return reason, true
}
