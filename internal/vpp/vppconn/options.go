package vppconn

import (
	"context"
	"time"
)

type options struct {
	lifetime     context.Context
	dialTimeout  time.Duration
	startTimeout time.Duration
	rootDir      string
}

// Option configures Connect.
type Option func(*options)

// WithDialTimeout bounds connecting to an existing API socket (default 10s).
func WithDialTimeout(timeout time.Duration) Option {
	return func(o *options) { o.dialTimeout = timeout }
}

// WithStartTimeout bounds starting a local VPP until it answers its API (default 60s: VPP maps
// its hugepages and loads plugins before it opens the socket).
func WithStartTimeout(timeout time.Duration) Option {
	return func(o *options) { o.startTimeout = timeout }
}

// WithRootDir sets where a VPP the forwarder starts keeps its configuration and API socket
// (default "/": /etc/vpp/helper/vpp.conf and /var/run/vpp/api.sock, as the stock forwarder).
func WithRootDir(dir string) Option {
	return func(o *options) { o.rootDir = dir }
}

// WithLifetime sets the context that ends a VPP the forwarder starts (default: the context given
// to Connect, which then bounds only the connecting). Shutdown needs VPP after start-up was
// cancelled, to release what connections hold.
func WithLifetime(ctx context.Context) Option {
	return func(o *options) { o.lifetime = ctx }
}
