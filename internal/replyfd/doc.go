// Package replyfd passes the namespaces of a connection back to the peer only in answer to the
// peer's own calls.
//
// sdk's sendfd server queues the descriptor of each file:// URL in the returned connection on the
// peer's connection, to travel with the next message written on it. A Close the forwarder issues
// itself (on expiry, or sdk's timeout) runs with the values of the Request's context, so the
// descriptor is queued on nsmgr's connection although no answer follows: it rides along with some
// later message nsmgr does not expect, or, when the connection closes first, grpcfd's goroutine
// that reports the failure blocks forever. This element is sendfd's server for Requests and for
// Closes nsmgr sent, and passes on any other Close without queueing anything.
package replyfd
