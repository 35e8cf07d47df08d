package journal

import (
	"context"
	"time"

	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// Cleanup releases what a record names.
type Cleanup func(ctx context.Context, rec *Record) error

// Retry bounds: a cleanup that failed is tried again after retryFirst, then after twice as long
// each time, up to retryMax between tries. Variables for the tests.
var (
	retryFirst = time.Second
	retryMax   = 5 * time.Minute
)

// Retire runs cleanup on the record of id and forgets the record once cleanup succeeds. The first
// attempt runs now and its error is returned; while it fails, it is tried again with backoff in the
// background until it succeeds, a Request begins on the connection again, or ctx ends. The record
// stays on disk until then, so a restart retries too.
func (j *Journal) Retire(ctx context.Context, id string, cleanup Cleanup) error {
	if j == nil {
		return nil
	}
	e := j.entry(id, false)
	if e == nil {
		return nil
	}
	e.mu.Lock()
	generation := e.generation
	e.mu.Unlock()
	done, err := j.tryRetire(ctx, id, e, generation, cleanup)
	if done {
		return err
	}
	log.FromContext(ctx).Warnf("journal: releasing connection %s failed, the record is kept and the release retried: %v", id, err)
	delay, most := retryFirst, retryMax
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			done, retryErr := j.tryRetire(ctx, id, e, generation, cleanup)
			if done {
				if retryErr == nil {
					log.FromContext(ctx).Infof("journal: connection %s released after a retry", id)
				}
				return
			}
			delay = min(2*delay, most)
			log.FromContext(ctx).Warnf("journal: releasing connection %s failed again (next try in %s): %v", id, delay, retryErr)
		}
	}()
	return err
}

// tryRetire makes one attempt. done is true when there is nothing more to try: the cleanup
// succeeded (err is then a failure to remove the record's file, if any) or the record is no longer
// this retirement's to release.
func (j *Journal) tryRetire(ctx context.Context, id string, e *entry, generation uint64, cleanup Cleanup) (done bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.detached || e.rec == nil || e.generation != generation {
		return true, nil
	}
	if err = cleanup(ctx, e.rec.Clone()); err != nil {
		return false, err
	}
	return true, j.forgetLocked(id, e)
}
