// Command e2e-demo is what `make demo` runs (through scripts/demo.sh): it
// brings a two-node NSM domain up in network namespaces with real SPIRE and
// the forwarder-vpp binary on real VPP where test/realvpp finds one (as the
// tests do), else on the VPP simulator, connects one client on the
// endpoint's node (kernel to kernel) and one on the other node (kernel, VXLAN,
// kernel), pings through both, prints what was created where with timings,
// and tears everything down, also when interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

const netnsBase = "demo"

func main() {
	repo := flag.String("repo", ".", "root of the forwarder-vpp checkout")
	kernelType := flag.String("kernel-interface-type", "auto", "forwarders' NSM_KERNEL_INTERFACE_TYPE: auto, tap or veth")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	out := newReport(os.Stdout)
	err := run(ctx, out, *repo, *kernelType)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "\ndemo interrupted; everything it started has been torn down")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "\ndemo failed:", err)
		os.Exit(1)
	}
	out.verdict()
}

func run(ctx context.Context, out *report, repo, kernelType string) (err error) {
	root, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	if err = topology.SweepStale(netnsBase); err != nil {
		return err
	}
	start := time.Now()
	bins, err := domain.Build(ctx, root, filepath.Join(root, ".cache", "e2e", "bin"))
	if err != nil {
		return err
	}
	out.timing("build harness, forwarder and simulator", time.Since(start))
	vpp, err := chooseVPP(out)
	if err != nil {
		return err
	}

	workDir, err := os.MkdirTemp("", "demo-")
	if err != nil {
		return err
	}
	fmt.Println("  bringing up SPIRE, the registry and per node VPP, nsmgr and forwarder (under a minute)...")
	d, err := domain.Start(ctx, domain.Config{
		Binaries:            bins,
		SpireBinDir:         filepath.Join(root, ".cache", "bin"),
		WorkDir:             workDir,
		NetnsPrefix:         topology.RunPrefix(netnsBase),
		Nodes:               2,
		KernelInterfaceType: kernelType,
		RealVPP:             vpp,
	})
	if err != nil {
		return fmt.Errorf("bring-up failed (logs in %s): %w", workDir, err)
	}
	defer func() {
		teardownStart := time.Now()
		closeErr := d.Close()
		left, listErr := topology.Namespaces(topology.RunPrefix(netnsBase))
		out.section("teardown")
		out.timing("stop every process, delete every namespace", time.Since(teardownStart))
		switch {
		case closeErr != nil || listErr != nil || len(left) > 0:
			err = errors.Join(err, closeErr, listErr, fmt.Errorf("namespaces left: %v (logs in %s)", left, workDir))
		case err != nil && ctx.Err() == nil:
			fmt.Printf("  logs kept in %s\n", workDir)
		default:
			_ = os.RemoveAll(workDir)
			fmt.Println("  nothing left behind: no namespaces, no processes")
		}
	}()
	out.section("bring-up")
	for _, step := range d.Timings {
		out.timing(step.Step, step.Duration)
	}
	fmt.Printf("  SVIDs from each node's SPIRE agent (join token): %s/{registry,nsmgr,forwarder,nse,nsc}\n",
		strings.TrimSuffix(d.SPIRE.ID(""), "/"))
	return connectAndPing(ctx, d, out)
}

// chooseVPP returns the real VPP binary the tests would run (test/realvpp.Find), or "" for the
// simulator when there is none, and says which one the demo uses.
func chooseVPP(out *report) (string, error) {
	binary, err := realvpp.Find()
	var notFound *realvpp.NotFoundError
	switch {
	case errors.As(err, &notFound):
		out.line("VPP: the simulator (test/vppsim): " + err.Error())
		return "", nil
	case err != nil:
		return "", err
	}
	out.line("VPP: real VPP, " + binary)
	return binary, nil
}
