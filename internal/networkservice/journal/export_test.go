package journal

import "time"

// SetRetryDelays shortens the retry backoff for a test and restores it afterwards.
func SetRetryDelays(first, most time.Duration) (restore func()) {
	previousFirst, previousMax := retryFirst, retryMax
	retryFirst, retryMax = first, most
	return func() { retryFirst, retryMax = previousFirst, previousMax }
}

// SetReprobeDelays shortens the backoff between probes of an unwritable directory for a test and
// restores it afterwards.
func SetReprobeDelays(first, most time.Duration) (restore func()) {
	previousFirst, previousMax := reprobeFirst, reprobeMax
	reprobeFirst, reprobeMax = first, most
	return func() { reprobeFirst, reprobeMax = previousFirst, previousMax }
}
