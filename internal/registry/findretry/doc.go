// Package findretry asks the registry again for a one-shot endpoint Find that failed without a
// gRPC code, before any of its answers is handed on.
//
// The nsmgr passes every endpoint URL that is a unix socket as a descriptor (sdk's registry
// sendfd server, over grpcfd v1.1.4). grpcfd closes the file it sends twice and may report the
// second close, "file already closed", as the send's error; sdk's sendfd server sees that report
// when another write on the same connection flushed the descriptor first, and fails the Find.
// The forwarder keeps one connection to the nsmgr for all its Finds (internal/registry/registrylookup), so
// such writes happen, and sdk's discover reads a failed Find as an empty list: the Request failed
// with "network service endpoint ... not found".
//
// A one-shot Find only reads, so it is read to its end here and, when the nsmgr ended it with
// codes.Unknown (an error no element there gave a code, as grpcfd's), asked again from the start,
// up to three attempts in all. An error with another code (PermissionDenied, NotFound,
// Unavailable, a deadline) is the registry's answer, and an error of this side's (no connection
// within the dial timeout) is no answer at all: both are returned at once, from Find, where the
// caller sees them instead of an empty list. A watching Find, whose stream does not end, passes as
// it is.
package findretry
