// Package replyfd passes the namespaces of a returned connection back to the peer with the answer
// to its Request, and never with a Close.
//
// sdk's sendfd server also queues, on Close, the descriptor of each file:// URL of the closed
// connection on the peer's connection, although a Close answers with nothing that could name it.
// A Close the forwarder issues itself (on expiry, or sdk's timeout) runs with the values of the
// Request's context, so the descriptor was queued on nsmgr's connection with no answer at all: it
// rode along with some later message nsmgr did not expect, or, when the connection closed first,
// grpcfd's goroutine that reports the failure blocked forever. And a Close whose namespace could
// not be verified (package recvnetns) would have had sendfd open the stand-in URL and fail.
package replyfd
