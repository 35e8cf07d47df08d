// Package recvnetns lets the forwarder open only the namespaces a peer handed it as file
// descriptors.
//
// A kernel (or memif) mechanism names the client's network namespace in its inodeURL parameter.
// On the wire that is inode://<dev>/<ino>, with the namespace's file descriptor passed beside the
// call over the unix socket; sdk's recvfd element receives the descriptor and rewrites the
// parameter to file:///proc/<forwarder pid>/fd/<n>, which the kernel elements then open. recvfd
// leaves every other form alone, so a file:// URL written by the peer (file:///proc/1/ns/net:
// the node's own namespace, as the forwarder runs with hostPID) would be opened as it stands, and
// sdk-kernel opens a missing or non-file URL as the forwarder's own namespace.
//
// This package wraps recvfd, on the server side toward the client and on the client side toward
// the next hop. Before recvfd, every inodeURL must be exactly inode://<dev>/<ino> (a kernel
// mechanism must carry one) and is remembered; after recvfd, it must be file:///proc/<own
// pid>/fd/<n> with descriptor n open on that very (dev, ino), and for a kernel mechanism, on a
// network namespace. A descriptor is a capability: the peer can only name a namespace it holds.
// Anything else fails the Request with InvalidArgument naming the field.
package recvnetns
