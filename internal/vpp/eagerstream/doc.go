// Package eagerstream keeps a slow reader of one VPP dump from stalling every other VPP call.
//
// govpp reads VPP's socket on one goroutine and hands each reply to its stream's channel, which
// holds 100 replies; when that channel is full it waits 100 ms and drops the reply. A caller that
// starts a dump and calls VPP again before reading it to its end (sdk-vpp's vxlan, wireguard and
// ipsec MTU lookups dump every interface and, for each, dump its addresses) therefore stalls the
// whole connection 100 ms for every interface past the 100th, loses those details and the dump's
// end, and waits for the rest forever: with 200 interfaces left by 100 connections, the first
// Request after a restart held the forwarder's VPP connection for 10 s and never answered.
//
// NewConnection reads every stream's replies as soon as govpp delivers them into a queue of its
// own, as VPP itself queues what a client has not read yet.
//
// Close also drains a stream VPP may still owe replies before govpp reuses its channel: it sends a
// control ping and reads until the reply, which VPP sends after everything it owed the stream. A
// dump read to its end (binapi ends each dump with a ping of its own) owes nothing and costs no
// second round trip. govpp passes a closed
// stream's channel, with any replies still in it, to the next call, and its Invoke decodes the
// first reply it finds as its own; a dump closed at the interface it looked for left details that
// the next TapCreateV3 took for its reply.
package eagerstream
