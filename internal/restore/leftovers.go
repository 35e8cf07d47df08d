package restore

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/fwdmetrics"
	"github.com/nsmfwd/forwarder-vpp/internal/journal"
)

// leftover is one connection a previous run recorded.
type leftover struct {
	rec *journal.Record
	// claimed is set while a Request that may adopt or rebuild the connection runs.
	claimed bool
}

// Leftovers are the connections previous runs left in the journal, until each is requested again
// (and adopted or rebuilt), closed, or released once its grace period ends. It is safe for
// concurrent use.
type Leftovers struct {
	journal  *journal.Journal
	releaser *Releaser
	adopter  *adopter

	mu   sync.Mutex
	byID map[string]*leftover
	// lifetime bounds the retries of releases that fail (see ExpireAfter).
	lifetime context.Context
	// graceOver is set once the grace period ended: a leftover given back later is released then.
	graceOver bool
}

// Owners lists the journal IDs of the connections still waiting, sorted.
func (l *Leftovers) Owners() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[*leftover]bool{}
	var owners []string
	for _, lo := range l.byID {
		if !seen[lo] && !lo.claimed {
			seen[lo] = true
			owners = append(owners, lo.rec.ID)
		}
	}
	sort.Strings(owners)
	return owners
}

// claim takes the leftover any of ids names for a Request, or returns nil.
func (l *Leftovers) claim(ids []string) *leftover {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		if lo, ok := l.byID[id]; ok && !lo.claimed {
			lo.claimed = true
			return lo
		}
	}
	return nil
}

// unclaim gives a leftover back after a Request failed: it is still the previous run's, and its
// grace period or a Close releases it.
//
// A leftover the grace period's release skipped because a Request held it is released at once:
// nothing else would, and its connection was not healed within its token's lifetime.
func (l *Leftovers) unclaim(lo *leftover) {
	l.mu.Lock()
	lo.claimed = false
	overdue, lifetime := l.graceOver, l.lifetime
	l.mu.Unlock()
	if overdue {
		log.FromContext(lifetime).Infof("restore: releasing the leftover of connection %s, given back after its grace period ended", lo.rec.ID)
		fwdmetrics.ExpiryRelease(lifetime, fwdmetrics.ExpiryRestartGrace)
		_ = l.ReleaseOwned(lifetime, lo.rec.ID)
	}
}

// take removes a leftover from the set.
func (l *Leftovers) take(lo *leftover) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range lo.rec.IDs() {
		if l.byID[id] == lo {
			delete(l.byID, id)
		}
	}
}

// settle ends a leftover whose connection was requested again successfully: the chain adopted or
// rebuilt it, and the journal now holds it under newID. A record of the previous run under another
// ID (the forwarder came back under another name) is dropped only now.
func (l *Leftovers) settle(ctx context.Context, lo *leftover, newID string) {
	l.take(lo)
	if lo.rec.ID == newID {
		return
	}
	if err := l.journal.Forget(lo.rec.ID); err != nil {
		log.FromContext(ctx).Warnf("restore: %v", err)
	}
}

// release removes what the leftover's record names and then forgets the record; a failed release
// is retried with backoff (see journal.Retire) and its first error returned.
func (l *Leftovers) release(ctx context.Context, lo *leftover) error {
	l.take(lo)
	l.mu.Lock()
	retries := l.lifetime
	l.mu.Unlock()
	if retries == nil {
		retries = context.WithoutCancel(ctx)
	}
	fwdmetrics.LeftoverReleased(ctx, fwdmetrics.KindConnection)
	// A Close's context ends with the call; the retries must not.
	return l.journal.Retire(log.WithLog(retries, log.FromContext(ctx)), lo.rec.ID, l.releaser.Release)
}

// ReleaseOwned releases the leftovers any of ids names.
func (l *Leftovers) ReleaseOwned(ctx context.Context, ids ...string) error {
	var errs []error
	for {
		lo := l.claim(ids)
		if lo == nil {
			return errors.Join(errs...)
		}
		errs = append(errs, l.release(ctx, lo))
	}
}

// ReleaseAll releases every leftover not being claimed.
func (l *Leftovers) ReleaseAll(ctx context.Context) error {
	return l.ReleaseOwned(ctx, l.Owners()...)
}

// ExpireAfter releases whatever is still unclaimed once grace has passed, unless ctx ends first.
// A release that fails (then, or on a Close) is retried until it succeeds or ctx ends.
func (l *Leftovers) ExpireAfter(ctx context.Context, grace time.Duration) {
	l.mu.Lock()
	l.lifetime = ctx
	l.mu.Unlock()
	if len(l.Owners()) == 0 {
		return
	}
	go func() {
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-ctx.Done():
		case <-timer.C:
			l.mu.Lock()
			l.graceOver = true
			l.mu.Unlock()
			owners := l.Owners()
			log.FromContext(ctx).Infof("restore: releasing leftovers of connections not requested within %s: %v", grace, owners)
			for range owners {
				fwdmetrics.ExpiryRelease(ctx, fwdmetrics.ExpiryRestartGrace)
			}
			_ = l.ReleaseOwned(ctx, owners...)
		}
	}()
}
