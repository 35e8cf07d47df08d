package restore

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// leftover is one object a previous run created for a connection, and how to remove it.
type leftover struct {
	owner       string
	description string
	release     func(ctx context.Context) error
	// dropOnClaim marks state the chain's own elements reconcile in place when the connection is
	// requested again: releasing it then would only delete what the chain re-adds at once.
	dropOnClaim bool
}

// Leftovers holds the objects found at start-up, grouped by the connection ID that owns them.
// It is safe for concurrent use; the zero value holds nothing.
type Leftovers struct {
	mu      sync.Mutex
	byOwner map[string][]leftover
}

func newLeftovers(items []leftover) *Leftovers {
	l := &Leftovers{byOwner: map[string][]leftover{}}
	for _, item := range items {
		l.byOwner[item.owner] = append(l.byOwner[item.owner], item)
	}
	return l
}

// Owners lists the connection IDs that still have leftovers, sorted.
func (l *Leftovers) Owners() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	owners := make([]string, 0, len(l.byOwner))
	for owner := range l.byOwner {
		owners = append(owners, owner)
	}
	sort.Strings(owners)
	return owners
}

// ReleaseOwned removes the leftovers of the given connection IDs, whatever their kind. Each leftover is released at
// most once: it is taken out of the set before it is removed, so a concurrent caller never
// removes it again (a failed removal is logged, not retried, because the next Request recreates
// the connection's objects anyway and the expiry pass catches what stays unclaimed).
func (l *Leftovers) ReleaseOwned(ctx context.Context, owners ...string) {
	var taken []leftover
	l.mu.Lock()
	for _, owner := range owners {
		taken = append(taken, l.byOwner[owner]...)
		delete(l.byOwner, owner)
	}
	l.mu.Unlock()
	releaseAll(ctx, taken)
}

// Claim hands the leftovers of the given connection IDs over to a Request that rebuilds the
// connection: those in the way of the rebuild are released, those the chain adopts are dropped.
func (l *Leftovers) Claim(ctx context.Context, owners ...string) {
	var released []leftover
	l.mu.Lock()
	for _, owner := range owners {
		for _, item := range l.byOwner[owner] {
			if item.dropOnClaim {
				log.FromContext(ctx).Infof("restore: connection %s is back, its %s is left to the chain", item.owner, item.description)
				continue
			}
			released = append(released, item)
		}
		delete(l.byOwner, owner)
	}
	l.mu.Unlock()
	releaseAll(ctx, released)
}

// ReleaseAll removes every leftover still unclaimed.
func (l *Leftovers) ReleaseAll(ctx context.Context) {
	l.mu.Lock()
	var taken []leftover
	for _, items := range l.byOwner {
		taken = append(taken, items...)
	}
	l.byOwner = map[string][]leftover{}
	l.mu.Unlock()
	releaseAll(ctx, taken)
}

// ExpireAfter releases whatever is still unclaimed once grace has passed, unless ctx ends first.
func (l *Leftovers) ExpireAfter(ctx context.Context, grace time.Duration) {
	if len(l.Owners()) == 0 {
		return
	}
	go func() {
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-ctx.Done():
		case <-timer.C:
			log.FromContext(ctx).Infof("restore: releasing leftovers of connections not requested within %s: %v", grace, l.Owners())
			l.ReleaseAll(ctx)
		}
	}()
}

// releaseAll removes items in reverse discovery order: kernel links and tunnels found last are
// independent of each other, and each VPP interface goes with what hangs off it (withoutDependents).
func releaseAll(ctx context.Context, items []leftover) {
	for i := len(items) - 1; i >= 0; i-- {
		item := items[i]
		if err := item.release(ctx); err != nil {
			log.FromContext(ctx).Warnf("restore: releasing %s of connection %s: %v", item.description, item.owner, err)
			continue
		}
		log.FromContext(ctx).Infof("restore: released %s of connection %s", item.description, item.owner)
	}
}
