package journal

import "time"

// SetRetryDelays shortens the retry backoff for a test and restores it afterwards.
func SetRetryDelays(first, most time.Duration) (restore func()) {
	previousFirst, previousMax := retryFirst, retryMax
	retryFirst, retryMax = first, most
	return func() { retryFirst, retryMax = previousFirst, previousMax }
}
