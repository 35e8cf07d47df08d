// Package requestcheck refuses hostile and malformed Requests before the forwarder acts on them.
//
// The forwarder runs privileged with the host's PID namespace, and sdk-vpp and sdk-kernel elements
// discover bad input only when they apply it, after VPP interfaces and kernel links exist. This
// element comes first in the chain and answers InvalidArgument naming the field when
//   - a repeated field or string map is longer than its bound (Limits; each entry costs memory and
//     most cost kernel or VPP writes);
//   - a mechanism names a namespace in any form but inode://<dev>/<ino>, the form of a namespace
//     passed as a file descriptor (see package recvnetns), or a kernel mechanism names none;
//   - an interface name, IP address, route or neighbour the forwarder applies does not parse.
//
// Policy routes are parsed by the policy-route element, which also refuses before any write.
package requestcheck
