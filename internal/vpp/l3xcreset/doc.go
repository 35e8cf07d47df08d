// Package l3xcreset deletes the IP cross-connects (l3xc) VPP holds on interfaces, so that the
// next cross-connect between them is made afresh.
//
// sdk-vpp cross-connects an IP connection's two interfaces with one l3xc per interface and
// family, and updates them in place on every Request. Real VPP (v24.10) has two behaviours that
// make an in-place update go wrong once one end of the connection was deleted and built again:
//   - l3xc_update of an existing entry swaps its path-list but does not stack its forwarding
//     again: an entry that fell to drop when its path's interface was deleted stays on drop,
//     although the new path resolves ("show l3xc" shows the path resolved and a dpo-drop);
//   - deleting an interface leaves the l3xc entries on it, keyed by its sw_if_index, which VPP
//     gives to the next interface it creates.
//
// So whoever deletes one end of an IP cross-connect to build it again (a restarted forwarder
// rebuilding a side it cannot adopt; peerkey rebuilding an IPsec end for the other end's new key)
// first deletes the cross-connects on both ends, and sdk-vpp's l3xconnect then creates them.
package l3xcreset
