package main

import (
	"fmt"
	"net"

	"github.com/kelseyhightower/envconfig"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/ipam"
	"github.com/networkservicemesh/sdk/pkg/ipam/vl3ipam"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

// runIPAM serves sdk's vl3 IPAM, as NSM's cmd-ipam-vl3: each endpoint that asks gets its own
// NSM_PREFIX_SIZE prefix of NSM_PREFIX, back in the pool when its stream ends.
func runIPAM() error {
	var cfg config
	if err := envconfig.Process("nsm", &cfg); err != nil {
		return err
	}
	if cfg.ListenOn.Scheme != "unix" {
		return fmt.Errorf("NSM_LISTEN_ON must be a unix:// URL, got %q", cfg.ListenOn.String())
	}
	_, network, err := net.ParseCIDR(cfg.Prefix)
	if err != nil {
		return fmt.Errorf("NSM_PREFIX %q: %w", cfg.Prefix, err)
	}
	if ones, bits := network.Mask.Size(); int(cfg.PrefixSize) <= ones || int(cfg.PrefixSize) > bits {
		return fmt.Errorf("NSM_PREFIX_SIZE %d: must be longer than NSM_PREFIX's /%d and at most /%d", cfg.PrefixSize, ones, bits)
	}
	ctx, workload, stop, err := nsmgrpc.Start(cfg.Name, cfg.Settings)
	if err != nil {
		return err
	}
	defer stop()
	server := grpc.NewServer(workload.ServerOptions()...)
	ipam.RegisterIPAMServer(server, vl3ipam.NewIPAMServer(cfg.Prefix, cfg.PrefixSize))
	errCh := nsmgrpc.Serve(ctx, server, cfg.ListenOn)
	// The harness waits for this line (domain.StartVl3IPAM).
	log.FromContext(ctx).Infof("vl3 IPAM serving %s in /%d prefixes at %s", cfg.Prefix, cfg.PrefixSize, cfg.ListenOn.String())
	select {
	case <-ctx.Done():
		return nil
	case err = <-errCh:
		return err
	}
}
