// Package vethpair is the kernel mechanism over a veth pair bound to VPP with af_packet, as
// sdk-vpp's kernelvethpair builds it, with one difference: the pair's names and MACs are chosen
// and written into the journal's intent before the pair exists. A forwarder killed anywhere
// between the pair's creation and the Request's commit (the end in the pod not yet renamed, no
// alias set, no af_packet bound) leaves a pair the next run can prove its own by the recorded
// name and MAC of the forwarder's end, and release.
package vethpair
