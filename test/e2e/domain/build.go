package domain

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binaries are the programs a domain runs, by absolute path.
type Binaries struct {
	Registry, Nsmgr, Endpoint, Client string
	Forwarder, Simulator              string
	// StockForwarder is test/stockforwarder, the stock-equivalent forwarder.
	StockForwarder string
	// IdleCut is e2e-idlecut, the idle-cutting middlebox (Config.IdleCut).
	IdleCut string
	// VlanEndpoint is e2e-nse-vlan, the remote vlan endpoint (StartVlanEndpoint); VlanHost is
	// e2e-vlanhost, a host on one VLAN of the trunk (StartVlanHost).
	VlanEndpoint, VlanHost string
	// VPPClient is e2e-nsc-vpp, a client with a VPP of its own (ConnectVPPClient).
	VPPClient string
	// VPPEndpoint is e2e-nse-vpp, an endpoint with a VPP of its own (StartVPPEndpoint).
	VPPEndpoint string
	// Vl3Endpoint is e2e-nse-vl3, the vl3 endpoint and IPAM server (StartVl3Endpoint).
	Vl3Endpoint string
	// FirewallEndpoint is e2e-nse-firewall-vpp, a pass-through endpoint with a VPP of its own
	// and an ACL (StartFirewallEndpoint).
	FirewallEndpoint string
}

// MissingError says a program of the domain does not exist in this tree yet.
type MissingError struct{ What, Where string }

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s is not in this tree (no %s)", e.What, e.Where)
}

// Build compiles the harness commands, the forwarder (module root), the
// stock-equivalent forwarder and the VPP simulator into dir. A missing forwarder or simulator is a *MissingError.
func Build(ctx context.Context, repoRoot, dir string) (*Binaries, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	bins := &Binaries{
		Registry:  filepath.Join(dir, "e2e-registry"),
		Nsmgr:     filepath.Join(dir, "e2e-nsmgr"),
		Endpoint:  filepath.Join(dir, "e2e-nse"),
		Client:    filepath.Join(dir, "e2e-nsc"),
		Forwarder: filepath.Join(dir, "forwarder-vpp"),
		Simulator: filepath.Join(dir, "vppsim"),
		// Its own name: SPIRE tells the forwarders apart by binary path.
		StockForwarder: filepath.Join(dir, "stockforwarder"),
		IdleCut:        filepath.Join(dir, "e2e-idlecut"),
		VlanEndpoint:   filepath.Join(dir, "e2e-nse-vlan"),
		VlanHost:       filepath.Join(dir, "e2e-vlanhost"),
		VPPClient:      filepath.Join(dir, "e2e-nsc-vpp"),
		VPPEndpoint:    filepath.Join(dir, "e2e-nse-vpp"),
		Vl3Endpoint:    filepath.Join(dir, "e2e-nse-vl3"),
	}
	bins.FirewallEndpoint = filepath.Join(dir, "e2e-nse-firewall-vpp")
	if err = goBuild(ctx, repoRoot, "-o", dir+"/",
		"./test/e2e/cmd/e2e-registry", "./test/e2e/cmd/e2e-nsmgr", "./test/e2e/cmd/e2e-nse", "./test/e2e/cmd/e2e-nsc",
		"./test/e2e/cmd/e2e-idlecut", "./test/e2e/cmd/e2e-nse-vlan",
		"./test/e2e/cmd/e2e-vlanhost", "./test/e2e/cmd/e2e-nsc-vpp", "./test/e2e/cmd/e2e-nse-vpp", "./test/stockforwarder",
		"./test/e2e/cmd/e2e-nse-vl3",
		"./test/e2e/cmd/e2e-nse-firewall-vpp"); err != nil {
		return nil, err
	}
	if _, err = os.Stat(filepath.Join(repoRoot, "main.go")); err != nil {
		return nil, &MissingError{What: "the forwarder-vpp command", Where: "main.go at the module root"}
	}
	if err = goBuild(ctx, repoRoot, "-o", bins.Forwarder, "."); err != nil {
		return nil, err
	}
	if _, err = os.Stat(filepath.Join(repoRoot, "test", "vppsim", "cmd", "vppsim")); err != nil {
		return nil, &MissingError{What: "the VPP simulator", Where: "test/vppsim/cmd/vppsim"}
	}
	if err = goBuild(ctx, repoRoot, "-o", bins.Simulator, "./test/vppsim/cmd/vppsim"); err != nil {
		return nil, err
	}
	return bins, nil
}

func goBuild(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", append([]string{"build"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
