package restore

import (
	"context"
	"fmt"
	"strings"

	"github.com/pkg/errors"
	"github.com/vishvananda/netlink"
)

// vethPeerAliasPrefixes are the aliases sdk-vpp's kernelvethpair gives the forwarder-side end of a
// veth pair: "veth-" followed by "client-<id>" or "server-<id>", where <id> is the connection's
// first path segment ID.
var vethPeerAliasPrefixes = []string{"veth-client-", "veth-server-"}

// scanKernel returns the forwarder-side veth ends in the namespace handle works in. Deleting that
// end deletes its peer in the client's namespace too, wherever that namespace is now.
func scanKernel(handle *netlink.Handle) ([]leftover, error) {
	links, err := handle.LinkList()
	if err != nil {
		return nil, errors.Wrap(err, "listing links")
	}
	var found []leftover
	for _, link := range links {
		owner, ok := vethPeerOwner(link)
		if !ok {
			continue
		}
		name, index := link.Attrs().Name, link.Attrs().Index
		found = append(found, leftover{
			owner:       owner,
			description: fmt.Sprintf("veth %s", name),
			release: func(context.Context) error {
				current, err := handle.LinkByIndex(index)
				if err != nil {
					return nil // already gone, e.g. its peer's namespace was destroyed
				}
				if current.Attrs().Name != name {
					return nil // the index now belongs to another link
				}
				return handle.LinkDel(current)
			},
		})
	}
	return found, nil
}

func vethPeerOwner(link netlink.Link) (string, bool) {
	if link.Type() != "veth" {
		return "", false
	}
	alias := link.Attrs().Alias
	for _, prefix := range vethPeerAliasPrefixes {
		if owner, ok := strings.CutPrefix(alias, prefix); ok && owner != "" {
			return owner, true
		}
	}
	return "", false
}
