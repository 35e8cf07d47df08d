// Command e2e-nsc is a client like NSM's cmd-nsc: run inside a pod's network
// namespace, it asks the local nsmgr for a kernel interface per
// NSM_NETWORK_SERVICES entry (kernel://service/ifname), with healing and the
// kernel liveness check on as a real NSC has them. Each granted connection is
// written to NSM_CONNECTION_FILE (protojson, one per line) so the harness can
// compare the pod's kernel state with the IP context; the file is rewritten
// after every refresh and heal. NSM_MTU, when set, is the MTU each
// connection's context asks for. As cmd-nsc, it keeps each connection's addresses out of
// the others' (sdk's excludedprefixes client, NSM_AWARENESS_GROUPS). On SIGTERM it closes its
// connections and exits non-zero if a Close failed; SIGUSR1 closes its last open connection.
//
// With NSM_SELECTOR set it is a vl3 load balancer as NSM's cmd-lb-vl3-vpp (NSM_SELECTOR,
// NSM_PROTOCOL, NSM_PORT, NSM_TARGET_PORT): its vl3 address balances over the vl3 clients the
// selector selects, in its pod's kernel (lbclient.go, lbwatch.go, lbnat.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/kelseyhightower/envconfig"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	kernelmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	kernelheal "github.com/networkservicemesh/sdk-kernel/pkg/kernel/tools/heal"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/client"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/excludedprefixes"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/heal"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/retry"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/tools/awarenessgroups"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/nsurl"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/connfile"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

type config struct {
	nsmgrpc.Settings
	Name                  string        `default:"nsc"`
	ConnectTo             url.URL       `default:"unix:///var/lib/networkservicemesh/nsm.io.sock" split_words:"true"`
	NetworkServices       []url.URL     `split_words:"true" desc:"kernel://service/ifname, comma separated"`
	DialTimeout           time.Duration `default:"5s" split_words:"true"`
	RequestTimeout        time.Duration `default:"30s" split_words:"true"`
	LivenessCheckEnabled  bool          `default:"true" split_words:"true"`
	LivenessCheckInterval time.Duration `default:"1s" split_words:"true"`
	LivenessCheckTimeout  time.Duration `default:"1s" split_words:"true"`
	ConnectionFile        string        `split_words:"true" desc:"where granted connections are written"`
	// RefreshAfter and RefreshSpacing, when RefreshSpacing is set, replace the sdk's refresh with
	// one paced refresh of each connection (pacedRefresh), for the load benchmark.
	RefreshAfter   time.Duration `split_words:"true"`
	RefreshSpacing time.Duration `split_words:"true"`
	// MTU, when set, is what each connection's context asks for (ConnectionContext.MTU); zero
	// leaves it to the path, as cmd-nsc does.
	MTU uint32 `envconfig:"MTU" desc:"MTU each connection's context asks for"`
	// AwarenessGroups are cmd-nsc's NSM_AWARENESS_GROUPS ([kernel://a/nsm-1,kernel://b/nsm-2]):
	// the connections of a group may share addresses (NSM's mutually-aware-nses example); every
	// other connection's addresses are excluded from the next one's, as cmd-nsc does.
	AwarenessGroups awarenessgroups.Decoder `split_words:"true" desc:"groups of network service URLs whose connections may share addresses"`
	// The vl3 load balancer's, named as cmd-lb-vl3-vpp's.
	Selector   map[string]string `desc:"vl3 load balancer: labels of the vl3 clients it balances over (key:value,...)"`
	Protocol   string            `default:"TCP" desc:"vl3 load balancer: TCP or UDP"`
	Port       uint16            `default:"80" desc:"vl3 load balancer: its port"`
	TargetPort uint16            `split_words:"true" desc:"vl3 load balancer: the servers' port; 0: NSM_PORT"`
}

// grantedLine starts the log line that says how long a first Request took.
const grantedLine = "first Request granted: "

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-nsc:", err)
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
		if cfg.NetworkServices[i].Scheme != "kernel" {
			return fmt.Errorf("NSM_NETWORK_SERVICES entry %q: only kernel:// is supported", cfg.NetworkServices[i].String())
		}
	}
	signalCtx, workload, stop, err := nsmgrpc.Start(cfg.Name, cfg.Settings)
	if err != nil {
		return err
	}
	defer stop()
	// Connections are closed after the signal, so the client chain lives on a
	// context of its own.
	ctx, cancelChain := context.WithCancel(context.WithoutCancel(signalCtx))
	defer cancelChain()

	healOptions := []heal.Option{}
	if cfg.LivenessCheckEnabled {
		healOptions = append(healOptions,
			heal.WithLivenessCheck(kernelheal.KernelLivenessCheck),
			heal.WithLivenessCheckInterval(cfg.LivenessCheckInterval),
			heal.WithLivenessCheckTimeout(cfg.LivenessCheckTimeout))
	}
	functionality := []networkservice.NetworkServiceClient{
		mechanisms.NewClient(map[string]networkservice.NetworkServiceClient{
			kernelmech.MECHANISM: chain.NewNetworkServiceClient(kernel.NewClient()),
		}),
		sendfd.NewClient(),
		excludedprefixes.NewClient(excludedprefixes.WithAwarenessGroups(cfg.AwarenessGroups)),
	}
	if len(cfg.Selector) > 0 {
		lb, lbErr := newLoadBalancer(ctx, &cfg, workload.DialOptions())
		if lbErr != nil {
			return lbErr
		}
		functionality = append([]networkservice.NetworkServiceClient{lb}, functionality...)
	}
	var record *connfile.Recorder
	if cfg.ConnectionFile != "" {
		record = connfile.New(cfg.ConnectionFile)
		functionality = append([]networkservice.NetworkServiceClient{record}, functionality...)
	}
	clientOptions := []client.Option{
		client.WithClientURL(&cfg.ConnectTo),
		client.WithName(cfg.Name),
		client.WithAuthorizeClient(authorize.NewClient()),
		client.WithHealClient(heal.NewClient(ctx, healOptions...)),
		client.WithAdditionalFunctionality(functionality...),
		client.WithDialTimeout(cfg.DialTimeout),
		client.WithDialOptions(workload.DialOptions()...),
	}
	if cfg.RefreshSpacing > 0 {
		clientOptions = append(clientOptions, client.WithoutRefresh())
	}
	nsmClient := retry.NewClient(client.NewClient(ctx, clientOptions...), retry.WithTryTimeout(cfg.RequestTimeout))
	paced := &pacedRefresh{client: nsmClient, delay: cfg.RefreshAfter, spacing: cfg.RefreshSpacing, timeout: cfg.RequestTimeout}

	refreshCtx, stopRefresh := context.WithCancel(ctx)
	var refreshing sync.WaitGroup
	closeAll := func() error {
		stopRefresh()
		refreshing.Wait()
		var errs []error
		for _, conn := range paced.connections() {
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
		// As cmd-nsc: each try is bounded by NSM_REQUEST_TIMEOUT and retried
		// until it succeeds or the client is told to stop.
		requested := time.Now()
		request := &networkservice.NetworkServiceRequest{
			Connection: &networkservice.Connection{
				Id:             fmt.Sprintf("%s-%d", cfg.Name, i),
				NetworkService: service.NetworkService(),
				Labels:         service.Labels(),
			},
			MechanismPreferences: []*networkservice.Mechanism{service.Mechanism()},
		}
		if cfg.MTU != 0 {
			request.Connection.Context = &networkservice.ConnectionContext{MTU: cfg.MTU}
		}
		conn, requestErr := nsmClient.Request(signalCtx, request.Clone())
		if requestErr != nil && signalCtx.Err() != nil {
			// Told to stop while connecting: a clean stop, not a failure.
			return closeAll()
		}
		if requestErr != nil {
			return errors.Join(fmt.Errorf("request %s: %w", cfg.NetworkServices[i].String(), requestErr), closeAll())
		}
		paced.add(request, conn)
		// The harness reads this line for the Request latency (domain.Client.RequestLatencies).
		log.FromContext(ctx).Infof("%s%s in %s", grantedLine, conn.GetId(), time.Since(requested))
		log.FromContext(ctx).Infof("connected to %s: interface %s, ip context %s", service.NetworkService(),
			conn.GetMechanism().GetParameters()["name"], protojson.Format(conn.GetContext().GetIpContext()))
	}
	if record != nil {
		if err = record.Start(); err != nil {
			return errors.Join(err, closeAll())
		}
	}
	if cfg.RefreshSpacing > 0 {
		refreshing.Go(func() { paced.run(refreshCtx) })
	}
	refreshing.Go(func() { closeLastOnSignal(refreshCtx, nsmClient, paced, record, cfg.RequestTimeout) })
	<-signalCtx.Done()
	return closeAll()
}
