package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

const netnsBase = "e2e"

var (
	repoRoot string
	binaries *domain.Binaries
	// forwarder is what every scenario runs on its nodes: this project's
	// forwarder-vpp, or the stock-equivalent one with E2E_FORWARDER=stock.
	forwarder domain.Forwarder
	// skipReason is set when this tree cannot run the scenarios at all; each
	// scenario skips with it rather than failing.
	skipReason string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if err := prepare(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	code := m.Run()
	if binaries != nil {
		_ = os.RemoveAll(filepath.Dir(binaries.Registry))
	}
	return code
}

// prepare builds every program once for all scenarios. Only a missing
// forwarder or simulator (another branch's work) turns into a skip; anything
// else that prevents the suite from running is an error.
func prepare() error {
	if os.Geteuid() != 0 {
		skipReason = "the e2e scenarios need root (network namespaces)"
		return nil
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	repoRoot = root
	if err = topology.SweepStale(netnsBase); err != nil {
		return err
	}
	install := exec.Command(filepath.Join(repoRoot, "scripts", "install-tools.sh"))
	install.Stdout, install.Stderr = os.Stderr, os.Stderr
	if err = install.Run(); err != nil {
		return fmt.Errorf("scripts/install-tools.sh: %w", err)
	}
	dir, err := os.MkdirTemp("", "e2e-bin-")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	binaries, err = domain.Build(ctx, repoRoot, dir)
	var missing *domain.MissingError
	if errors.As(err, &missing) {
		skipReason = missing.Error()
		binaries = nil
		_ = os.RemoveAll(dir)
		return nil
	}
	if err != nil {
		return err
	}
	forwarder, err = binaries.ForwarderByName(os.Getenv("E2E_FORWARDER"))
	return err
}
