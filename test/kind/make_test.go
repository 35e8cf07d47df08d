package kind

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// makeDryRun returns the commands make would run for target (make -n), without running them:
// the release targets need Docker, which the static checks do without.
func makeDryRun(t *testing.T, target string) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on PATH")
	}
	cmd := exec.Command("make", "-n", "-C", repoRoot(t), target)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make -n %s: %s", target, out)
	return strings.ReplaceAll(string(out), "\\\n", " ")
}

// TestMakeImageBuildsTheReleaseImage: make image tags the image with VERSION, the tag the
// manifests deploy, and stamps it through the Dockerfile's build arguments.
func TestMakeImageBuildsTheReleaseImage(t *testing.T) {
	version := releaseVersion(t)
	out := makeDryRun(t, "image")
	require.Contains(t, out, "docker build ")
	fields := strings.Fields(out)
	require.Contains(t, fields, "VERSION="+version)
	require.Contains(t, fields, ourImage+":"+version)
	for _, arg := range []string{"REVISION", "CREATED"} {
		require.Regexp(t, regexp.MustCompile(`--build-arg `+arg+`=\S+`), out)
	}
}

func TestMakeBuildStampsTheVersion(t *testing.T) {
	require.Contains(t, makeDryRun(t, "build"), `-ldflags "-X main.version=`+releaseVersion(t)+`"`)
}

// TestMakeKindE2EFitsTheSuite: the kind suite has its own target, with a timeout the suite fits
// in, while make test leaves it out.
func TestMakeKindE2EFitsTheSuite(t *testing.T) {
	out := makeDryRun(t, "kind-e2e")
	require.Contains(t, out, e2eSwitch+"=1 ")
	require.Contains(t, out, "-run TestKindE2E")
	match := regexp.MustCompile(`-timeout (\S+)`).FindStringSubmatch(out)
	require.NotNil(t, match, "make kind-e2e sets no -timeout: %s", out)
	timeout, err := time.ParseDuration(match[1])
	require.NoError(t, err)
	require.Greater(t, timeout, e2eBudget, "the kind suite would skip for lack of time")

	require.NotContains(t, makeDryRun(t, "test"), e2eSwitch, "make test leaves the kind suite to make kind-e2e")
}
