// Package serve runs the forwarder's gRPC server on NSM_LISTEN_ON and stops it in bounded time.
package serve
