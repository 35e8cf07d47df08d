package restore

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
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

	mu sync.Mutex
	// byID holds each leftover under its record's ID only, this forwarder's own segment of the
	// path: never under the path's other IDs, which another hop of the same path shares.
	byID map[string]*leftover
	// lifetime bounds the retries of releases that fail (see ExpireAfter).
	lifetime context.Context
	// serialize runs a release made outside the chain under the connection's lock (SerializeWith).
	serialize func(id string, f func())
	// graceOver is set once the grace period ended: a leftover given back later is released then.
	graceOver bool
	// closeNextHop tells a previous run's next hop to close its side (CloseNextHopsWith).
	closeNextHop NextHopCloser
}

// SerializeWith makes every release the chain does not drive (ReleaseOwned, the grace period's,
// and the Close that NewCloseServer handles) run through do, under the lock of the connection it
// releases: the lock the chain's expiry element holds around each Request, Close and expiry of
// that connection. Call it before the forwarder serves.
func (l *Leftovers) SerializeWith(do func(id string, f func())) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.serialize = do
}

// CloseNextHopsWith makes a leftover's next hop hear of its end through closeNextHop: when its
// Close arrives (sdk's begin drops it before the onward chain), and when it comes back toward
// another next hop (begin does not close the old one for a connection it did not establish).
// Without it, the next hop keeps its side until the connection expires there. Call it before the
// forwarder serves.
func (l *Leftovers) CloseNextHopsWith(closeNextHop NextHopCloser) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeNextHop = closeNextHop
}

// serialized runs f under the lock of connection id, if SerializeWith gave one.
func (l *Leftovers) serialized(id string, f func()) {
	l.mu.Lock()
	do := l.serialize
	l.mu.Unlock()
	if do == nil {
		f()
		return
	}
	do(id, f)
}

// Owners lists the journal IDs of the connections still waiting, sorted.
func (l *Leftovers) Owners() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var owners []string
	for _, lo := range l.byID {
		if !lo.claimed {
			owners = append(owners, lo.rec.ID)
		}
	}
	sort.Strings(owners)
	return owners
}

// claim takes the leftover of conn's hop for a Request or a Close, or returns nil: the record of
// conn's own ID, else the record of the same hop under the name the forwarder had before (see
// journal.Hop). Never one that merely shares an ID of the path.
func (l *Leftovers) claim(conn *networkservice.Connection) *leftover {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.claimLocked(l.findLocked(conn))
}

// findLocked is the unclaimed leftover of conn's hop, or nil. Call with l.mu held.
func (l *Leftovers) findLocked(conn *networkservice.Connection) *leftover {
	if lo, ok := l.byID[conn.GetId()]; ok {
		if lo.claimed {
			return nil
		}
		return lo
	}
	hop, ok := journal.HopOf(conn)
	if !ok {
		return nil
	}
	for _, lo := range l.byID {
		if !lo.claimed && lo.rec.RenamedAs(conn.GetId(), hop) {
			return lo
		}
	}
	return nil
}

// waiting is whether conn's hop has a leftover no Request claimed: a cheap look before a Close is
// authorized.
func (l *Leftovers) waiting(conn *networkservice.Connection) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.findLocked(conn) != nil
}

// claimOwned takes the leftover whose record is id's, or returns nil.
func (l *Leftovers) claimOwned(id string) *leftover {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.claimLocked(l.byID[id])
}

func (l *Leftovers) claimLocked(lo *leftover) *leftover {
	if lo == nil || lo.claimed {
		return nil
	}
	lo.claimed = true
	return lo
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
		// The failed Request still holds the connection's lock (see SerializeWith), which the
		// release takes: it runs once the Request has returned.
		go func() { _ = l.ReleaseOwned(lifetime, lo.rec.ID) }()
	}
}

// take removes a leftover from the set.
func (l *Leftovers) take(lo *leftover) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byID[lo.rec.ID] == lo {
		delete(l.byID, lo.rec.ID)
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

// ReleaseOwned releases the leftovers whose records are those of ids, each under its connection's
// lock (see SerializeWith): a Request that began on it first completes, and claims it.
func (l *Leftovers) ReleaseOwned(ctx context.Context, ids ...string) error {
	var errs []error
	for _, id := range ids {
		l.serialized(id, func() {
			if lo := l.claimOwned(id); lo != nil {
				errs = append(errs, l.release(ctx, lo))
			}
		})
	}
	return errors.Join(errs...)
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
