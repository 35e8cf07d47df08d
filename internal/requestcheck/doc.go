// Package requestcheck rejects malformed Requests before the forwarder programs anything.
//
// sdk-vpp and sdk-kernel elements discover bad input only when they apply it, after VPP
// interfaces and kernel links exist, and answer with errors that do not say which field was wrong.
// This element checks the fields the forwarder itself applies (the kernel mechanism's namespace
// URL and interface name, IP addresses, routes and neighbours) and answers InvalidArgument
// naming the field and the value. Policy routes are left to the policy-route element.
package requestcheck
