package realvpp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BinaryEnv names the vpp binary tests run; it wins over PATH and the unpacked build.
const BinaryEnv = "FORWARDER_TEST_VPP"

// cachedBinary is where scripts/install-tools.sh unpacks ../shared/vpp/*.tar.xz, relative to
// the repository root.
const cachedBinary = ".cache/vpp/bin/vpp"

// modulePath identifies the repository root among the directories above a test.
const modulePath = "module github.com/nsmfwd/forwarder-vpp"

// NotFoundError says where a VPP was looked for; tests skip with it.
type NotFoundError struct{ Tried []string }

func (e *NotFoundError) Error() string {
	return "no real VPP: tried " + strings.Join(e.Tried, ", ") + " (scripts/install-tools.sh unpacks ../shared/vpp/*.tar.xz when it exists)"
}

// Find returns the absolute path of the vpp binary to run: $FORWARDER_TEST_VPP, else vpp on
// PATH, else .cache/vpp/bin/vpp of this repository. A set but unusable FORWARDER_TEST_VPP is an
// error, not a fallback: whoever set it wants that VPP.
func Find() (string, error) {
	if configured := os.Getenv(BinaryEnv); configured != "" {
		if err := executable(configured); err != nil {
			return "", fmt.Errorf("%s=%s: %w", BinaryEnv, configured, err)
		}
		return filepath.Abs(configured)
	}
	tried := []string{"$" + BinaryEnv + " (unset)", "vpp on PATH"}
	if onPath, err := exec.LookPath("vpp"); err == nil {
		return filepath.Abs(onPath)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", errors.Join(&NotFoundError{Tried: tried}, err)
	}
	cached := filepath.Join(root, cachedBinary)
	if executable(cached) == nil {
		return cached, nil
	}
	return "", &NotFoundError{Tried: append(tried, cached)}
}

func executable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// RepoRoot is the forwarder repository holding the working directory: go test runs each
// package's tests in the package's directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, readErr := os.ReadFile(filepath.Join(dir, "go.mod"))
		if readErr == nil && strings.HasPrefix(string(data), modulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the working directory is not inside the forwarder-vpp repository")
		}
		dir = parent
	}
}
