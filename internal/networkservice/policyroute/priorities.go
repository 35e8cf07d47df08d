package policyroute

import (
	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
)

// priorities hands out the priorities of one plan's new rules. The kernel keeps a family's rules in one
// list ordered by priority and walks every rule of lower or equal priority to insert one, so a rule placed
// among ten thousand others costs tens of microseconds. A new rule therefore takes the priority just below
// the lowest one in the range, and a plan adds its rules in descending priority: each insert stops at the
// head of the range. Precedence between overlapping selectors is thus newest first. Once the range is used
// up downwards, new rules take the lowest free priorities, and when none is free they share the first.
// The choice depends only on the kernel's rules, so every forwarder instance makes the same one.
type priorities struct {
	view *routeview.View
	opts *options
	// next is, per family, the priority handed out last, or the lowest one in use before the first.
	next map[uint8]uint32
	// scan is, per family, where the search for a free priority goes on once the range is used up.
	scan map[uint8]uint32
}

func newPriorities(view *routeview.View, opts *options) *priorities {
	return &priorities{view: view, opts: opts, next: make(map[uint8]uint32), scan: make(map[uint8]uint32)}
}

func (p *priorities) take(family uint8) uint32 {
	first, last := p.opts.firstPriority, p.opts.lastPriority()
	next, started := p.next[family]
	if !started {
		next = last + 1
		if lowest, ok := p.view.LowestPriority(family, first, last); ok {
			next = lowest
		}
	}
	if next > first {
		p.next[family] = next - 1
		return next - 1
	}
	p.next[family] = first
	scan, scanning := p.scan[family]
	if !scanning {
		scan = first
	}
	for ; scan <= last; scan++ {
		if !p.view.PriorityUsed(family, scan) {
			p.scan[family] = scan + 1
			return scan
		}
	}
	p.scan[family] = scan
	return first
}
