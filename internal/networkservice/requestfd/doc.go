// Package requestfd sends the descriptors of a Request's file:// URLs to the next hop, as sdk's
// sendfd client does, and leaves the request as it found it when the call fails.
//
// sdk's sendfd client rewrites each file:// URL it sends into the inode:// URL the peer receives
// it by, in place, and writes back only the returned connection's. When the call fails, the
// request keeps the inode:// URLs; among them is the connection's mechanism, which sdk's
// mechanismtranslation loads for every Request from what it stored of the last answer, without a
// copy. The connection's next Request then names that descriptor by inode:// only, sendfd sends
// nothing for it (it sends file:// URLs only), and the next hop's recvfd waits for a descriptor
// that never comes until the Request times out: once an endpoint failed one refresh answer (as
// its sendfd does now and then, see internal/transport/fdtransport), every retry of the connection failed,
// on the stock chain too.
package requestfd
