// Package journaltest helps tests stand in for a forwarder that dies at a chosen instant: what
// the journal holds on disk then is what the next run starts from.
package journaltest

import (
	"os"
	"path/filepath"
)

// Snapshot copies the journal's record files in from as they are now into to, as a crash at
// this instant would leave them.
func Snapshot(from, to string) error {
	files, err := filepath.Glob(filepath.Join(from, "*.json"))
	if err != nil {
		return err
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if err = os.WriteFile(filepath.Join(to, filepath.Base(file)), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
