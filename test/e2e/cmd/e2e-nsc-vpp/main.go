// Command e2e-nsc-vpp is a client whose data plane is a VPP of its own, like NSM's cmd-nsc-vpp:
// run in a pod's network namespace beside a VPP (NSM_VPP_API_SOCKET), it asks the local nsmgr
// for each NSM_NETWORK_SERVICES entry (memif://service/name) with the memif mechanism. The
// forwarder serves the memif socket in this namespace; this client's VPP connects to it as the
// memif slave and gets the connection's addresses and routes (sdk-vpp's client elements, as
// cmd-nsc-vpp has them), and heals on the connection monitor's events as cmd-nsc-vpp does. Each
// connection granted is written to NSM_CONNECTION_FILE (protojson, one per line) once all are,
// and the file is rewritten after every refresh and heal, once this client's VPP took the grant
// up (the harness reads its modification time to see a heal go through). On
// SIGTERM it closes its connections, which removes the memif from its VPP, and exits non-zero if
// a Close failed.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"go.fd.io/govpp"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	memifmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/connectioncontext"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/memif"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/up"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/client"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/heal"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/retry"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/nsurl"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/connfile"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

type config struct {
	nsmgrpc.Settings
	Name            string        `default:"nsc-vpp"`
	ConnectTo       url.URL       `default:"unix:///var/lib/networkservicemesh/nsm.io.sock" split_words:"true"`
	NetworkServices []url.URL     `split_words:"true" desc:"memif://service/name, comma separated"`
	VppAPISocket    string        `envconfig:"VPP_API_SOCKET" desc:"this client's own VPP"`
	DialTimeout     time.Duration `default:"5s" split_words:"true"`
	RequestTimeout  time.Duration `default:"30s" split_words:"true"`
	ConnectionFile  string        `split_words:"true" desc:"where granted connections are written"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-nsc-vpp:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config
	if err := envconfig.Process("nsm", &cfg); err != nil {
		return err
	}
	if len(cfg.NetworkServices) == 0 {
		return errors.New("NSM_NETWORK_SERVICES is empty")
	}
	for i := range cfg.NetworkServices {
		if !strings.EqualFold(cfg.NetworkServices[i].Scheme, memifmech.MECHANISM) {
			return fmt.Errorf("NSM_NETWORK_SERVICES entry %q: only memif:// is supported", cfg.NetworkServices[i].String())
		}
	}
	if cfg.VppAPISocket == "" {
		return errors.New("NSM_VPP_API_SOCKET is empty: this client drives a VPP of its own")
	}
	signalCtx, workload, stop, err := nsmgrpc.Start(cfg.Name, cfg.Settings)
	if err != nil {
		return err
	}
	defer stop()
	// Connections are closed after the signal, so the client chain lives on a context of its own.
	ctx, cancelChain := context.WithCancel(context.WithoutCancel(signalCtx))
	defer cancelChain()
	vppConn, err := govpp.Connect(cfg.VppAPISocket)
	if err != nil {
		return fmt.Errorf("connecting to VPP at %s: %w", cfg.VppAPISocket, err)
	}
	defer vppConn.Disconnect()

	var record *connfile.Recorder
	functionality := []networkservice.NetworkServiceClient{
		up.NewClient(ctx, vppConn),
		connectioncontext.NewClient(vppConn),
		memif.NewClient(ctx, vppConn),
		sendfd.NewClient(),
	}
	if cfg.ConnectionFile != "" {
		record = connfile.New(cfg.ConnectionFile)
		functionality = append([]networkservice.NetworkServiceClient{record}, functionality...)
	}
	nsmClient := retry.NewClient(client.NewClient(ctx,
		client.WithClientURL(&cfg.ConnectTo),
		client.WithName(cfg.Name),
		client.WithAuthorizeClient(authorize.NewClient()),
		// cmd-nsc-vpp heals on the connection monitor's events, as here (no data-path liveness
		// check: its data plane is its own VPP, not the kernel).
		client.WithHealClient(heal.NewClient(ctx)),
		client.WithAdditionalFunctionality(functionality...),
		client.WithDialTimeout(cfg.DialTimeout),
		client.WithDialOptions(workload.DialOptions()...),
	), retry.WithTryTimeout(cfg.RequestTimeout))

	var granted []*networkservice.Connection
	closeAll := func() error {
		var errs []error
		for _, conn := range granted {
			closeCtx, cancelClose := context.WithTimeout(ctx, cfg.RequestTimeout)
			_, closeErr := nsmClient.Close(closeCtx, conn)
			cancelClose()
			if closeErr != nil {
				errs = append(errs, fmt.Errorf("close %s: %w", conn.GetId(), closeErr))
			}
		}
		return errors.Join(errs...)
	}
	for i := range cfg.NetworkServices {
		service := (*nsurl.NSURL)(&cfg.NetworkServices[i])
		request := &networkservice.NetworkServiceRequest{
			Connection: &networkservice.Connection{
				Id:             fmt.Sprintf("%s-%d", cfg.Name, i),
				NetworkService: service.NetworkService(),
				Labels:         service.Labels(),
			},
			MechanismPreferences: []*networkservice.Mechanism{service.Mechanism()},
		}
		conn, requestErr := nsmClient.Request(signalCtx, request)
		if requestErr != nil && signalCtx.Err() != nil {
			return closeAll()
		}
		if requestErr != nil {
			return errors.Join(fmt.Errorf("request %s: %w", cfg.NetworkServices[i].String(), requestErr), closeAll())
		}
		granted = append(granted, conn)
		log.FromContext(ctx).Infof("connected to %s over memif %s: ip context %s", service.NetworkService(),
			memifmech.ToMechanism(conn.GetMechanism()).GetSocketFilename(), protojson.Format(conn.GetContext().GetIpContext()))
	}
	if record != nil {
		if err = record.Start(); err != nil {
			return errors.Join(err, closeAll())
		}
	}
	<-signalCtx.Done()
	return closeAll()
}
