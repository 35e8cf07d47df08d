package kind

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
)

const (
	forwarderBinary = "/bin/forwarder-vpp"
	vppImage        = "ghcr.io/networkservicemesh/govpp/vpp"
)

// dockerInstruction is one logical Dockerfile line (continuations joined).
type dockerInstruction struct {
	keyword string // upper case: FROM, RUN, COPY, ...
	args    string
	line    int
}

type dockerStage struct {
	name         string
	base         string // after global ARG substitution
	instructions []dockerInstruction
}

type dockerfile struct {
	globalArgs map[string]string
	stages     []dockerStage
}

var dockerVariable = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// parseDockerfile understands what our Dockerfile uses: comments, line continuations, global ARGs
// with defaults substituted into FROM, and named stages. Blank and comment lines inside a continuation
// are skipped, as Docker does. Anything it cannot read is an error.
func parseDockerfile(text string) (*dockerfile, error) {
	df := &dockerfile{globalArgs: map[string]string{}}
	var logical strings.Builder
	start := 0
	for i, raw := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if logical.Len() == 0 {
			start = i + 1
		}
		if continued, ok := strings.CutSuffix(trimmed, `\`); ok {
			logical.WriteString(continued + " ")
			continue
		}
		logical.WriteString(trimmed)
		if err := df.add(logical.String(), start); err != nil {
			return nil, err
		}
		logical.Reset()
	}
	if logical.Len() != 0 {
		return nil, fmt.Errorf("line %d: continuation runs past the end of the file", start)
	}
	if len(df.stages) == 0 {
		return nil, fmt.Errorf("no FROM instruction")
	}
	return df, nil
}

func (df *dockerfile) add(logical string, line int) error {
	keyword, args, _ := strings.Cut(logical, " ")
	instruction := dockerInstruction{keyword: strings.ToUpper(keyword), args: strings.TrimSpace(args), line: line}
	switch {
	case instruction.keyword == "FROM":
		fields := strings.Fields(instruction.args)
		stage := dockerStage{base: df.expand(fields[0])}
		switch {
		case len(fields) == 3 && strings.EqualFold(fields[1], "AS"):
			stage.name = fields[2]
		case len(fields) != 1:
			return fmt.Errorf("line %d: cannot read FROM %q", line, instruction.args)
		}
		df.stages = append(df.stages, stage)
	case len(df.stages) == 0 && instruction.keyword == "ARG":
		name, value, _ := strings.Cut(instruction.args, "=")
		df.globalArgs[name] = value
	case len(df.stages) == 0:
		return fmt.Errorf("line %d: %s before the first FROM", line, instruction.keyword)
	default:
		current := &df.stages[len(df.stages)-1]
		current.instructions = append(current.instructions, instruction)
	}
	return nil
}

func (df *dockerfile) expand(s string) string {
	return dockerVariable.ReplaceAllStringFunc(s, func(ref string) string {
		match := dockerVariable.FindStringSubmatch(ref)
		return df.globalArgs[match[1]+match[2]]
	})
}

func (df *dockerfile) stage(name string) *dockerStage {
	for i := range df.stages {
		if df.stages[i].name == name {
			return &df.stages[i]
		}
	}
	return nil
}

// imageOf follows FROM <earlier stage> chains down to the external image.
func (df *dockerfile) imageOf(stage *dockerStage) string {
	for seen := 0; seen <= len(df.stages); seen++ {
		parent := df.stage(stage.base)
		if parent == nil {
			return stage.base
		}
		stage = parent
	}
	return stage.base
}

func (s *dockerStage) all(keyword string) []dockerInstruction {
	var found []dockerInstruction
	for _, instruction := range s.instructions {
		if instruction.keyword == keyword {
			found = append(found, instruction)
		}
	}
	return found
}

// copiedFrom reports which stage the file destination was copied from in this stage, "" if none.
func (s *dockerStage) copiedFrom(destination string) string {
	for _, instruction := range s.all("COPY") {
		fields := strings.Fields(instruction.args)
		if len(fields) == 3 && strings.HasPrefix(fields[0], "--from=") && fields[2] == destination {
			return strings.TrimPrefix(fields[0], "--from=")
		}
	}
	return ""
}

// execForm reads the JSON (exec) form of ENTRYPOINT/CMD; shell form would put /bin/sh in front of
// the forwarder and swallow SIGTERM, which the forwarder needs to close its connections.
func execForm(instruction dockerInstruction) ([]string, error) {
	var argv []string
	if err := json.Unmarshal([]byte(instruction.args), &argv); err != nil {
		return nil, fmt.Errorf("line %d: %s is not in exec form: %w", instruction.line, instruction.keyword, err)
	}
	return argv, nil
}

func loadDockerfile(t *testing.T) *dockerfile {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	require.NoError(t, err)
	df, err := parseDockerfile(string(text))
	require.NoError(t, err)
	return df
}

// goDirective reads the go line of go.mod: the image's toolchain must be able to build the module.
func goDirective(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	require.NoError(t, err)
	match := regexp.MustCompile(`(?m)^go (\d+\.\d+)(\.\d+)?\s*$`).FindStringSubmatch(string(text))
	require.NotNil(t, match, "go.mod has no go directive")
	return match[1] + match[2]
}

func TestDockerfileBuildStageCompilesModuleRoot(t *testing.T) {
	df := loadDockerfile(t)
	runtime := df.stages[len(df.stages)-1]
	builder := runtime.copiedFrom(forwarderBinary)
	require.NotEmpty(t, builder, "the last stage does not COPY --from=<stage> %s", forwarderBinary)
	build := df.stage(builder)
	require.NotNil(t, build, "COPY --from=%s names no stage", builder)

	image := df.imageOf(build)
	goVersion := goDirective(t)
	require.Truef(t, image == "golang:"+goVersion || strings.HasPrefix(goVersion, strings.TrimPrefix(image, "golang:")+"."),
		"build stage image %q cannot be relied on to build a module that says go %s", image, goVersion)

	var compile []dockerInstruction
	for _, run := range build.all("RUN") {
		if strings.Contains(run.args, "go build") {
			compile = append(compile, run)
		}
	}
	require.Len(t, compile, 1, "build stage must run exactly one go build")
	argv := strings.Fields(compile[0].args)
	require.Contains(t, argv, "-trimpath", "line %d", compile[0].line)
	output := slices.Index(argv, "-o")
	require.True(t, output >= 0 && output+1 < len(argv) && argv[output+1] == forwarderBinary,
		"line %d: go build must write %s", compile[0].line, forwarderBinary)
	require.Equal(t, ".", argv[len(argv)-1], "line %d: go build must compile the module root", compile[0].line)

	require.True(t, stageSetsEnv(build, "CGO_ENABLED", "0") || strings.Contains(compile[0].args, "CGO_ENABLED=0"),
		"the forwarder must be static: set CGO_ENABLED=0 in the build stage")
}

func stageSetsEnv(stage *dockerStage, name, value string) bool {
	for _, env := range stage.all("ENV") {
		for _, field := range strings.Fields(env.args) {
			if field == name+"="+value {
				return true
			}
		}
	}
	return false
}

func TestDockerfileRuntimeRunsForwarderOnVPP(t *testing.T) {
	df := loadDockerfile(t)
	runtime := &df.stages[len(df.stages)-1]
	require.True(t, strings.HasPrefix(df.imageOf(runtime), vppImage+":v"),
		"the default (last) stage must run on %s, got %q", vppImage, df.imageOf(runtime))

	entrypoints := runtime.all("ENTRYPOINT")
	require.Len(t, entrypoints, 1, "the runtime stage needs exactly one ENTRYPOINT")
	argv, err := execForm(entrypoints[0])
	require.NoError(t, err)
	require.Equal(t, []string{forwarderBinary}, argv)
	require.Empty(t, runtime.all("CMD"), "a CMD would pass arguments the forwarder does not take")
}

func TestDockerfileTestTargetRunsGoTest(t *testing.T) {
	df := loadDockerfile(t)
	test := df.stage("test")
	require.NotNil(t, test, "no stage named test (docker build --target test)")
	require.True(t, strings.HasPrefix(df.imageOf(test), vppImage+":"), "tests should see the same VPP as production")
	cmds := test.all("CMD")
	require.Len(t, cmds, 1)
	argv, err := execForm(cmds[0])
	require.NoError(t, err)
	require.Equal(t, []string{"go", "test"}, argv[:2])
	require.Equal(t, "./...", argv[len(argv)-1])
}

func TestDockerignoreKeepsTheModule(t *testing.T) {
	for _, pattern := range dockerignorePatterns(t) {
		for _, needed := range []string{"go.mod", "go.sum", "main.go", "internal/startup/config/config.go", "internal/vpp/vppinit/xdp/afxdp.c", "scripts/build-xdp.sh", "Dockerfile"} {
			require.False(t, dockerignoreMatches(t, pattern, needed), ".dockerignore pattern %q drops %s from the build context", pattern, needed)
		}
	}
}

func TestParseDockerfileRejectsWhatItCannotRead(t *testing.T) {
	for name, text := range map[string]string{
		"no FROM":               "RUN true\n",
		"dangling continuation": "FROM scratch\nRUN true \\\n",
		"odd FROM":              "FROM a b c d\n",
	} {
		_, err := parseDockerfile(text)
		require.Error(t, err, name)
	}
	df, err := parseDockerfile("ARG V=1\nFROM img:${V} AS one\nRUN a \\\n  b\nFROM one\n")
	require.NoError(t, err)
	require.Equal(t, "img:1", df.stages[0].base)
	require.Equal(t, "a  b", df.stages[0].instructions[0].args)
	require.Equal(t, "img:1", df.imageOf(&df.stages[1]))
}

// TestDockerfileShipsTheXDPProgram: the runtime image carries the uplink's XDP program where
// NSM_VPP_INIT=AF_XDP loads it by default, built by the script the tests build it with.
func TestDockerfileShipsTheXDPProgram(t *testing.T) {
	df := loadDockerfile(t)
	runtime := &df.stages[len(df.stages)-1]
	require.Equal(t, "/bin/afxdp.o", vppinit.DefaultXDPProgram)
	builder := runtime.copiedFrom(vppinit.DefaultXDPProgram)
	require.NotEmpty(t, builder, "the runtime image must contain %s", vppinit.DefaultXDPProgram)
	build := df.stage(builder)
	require.NotNil(t, build)
	var compiles []string
	for _, run := range build.all("RUN") {
		if strings.Contains(run.args, "build-xdp.sh") {
			compiles = append(compiles, run.args)
		}
	}
	require.Equal(t, []string{"scripts/build-xdp.sh " + vppinit.DefaultXDPProgram}, compiles)
	installsLibbpf := false
	for _, run := range runtime.all("RUN") {
		installsLibbpf = installsLibbpf || strings.Contains(run.args, "libbpf")
	}
	require.True(t, installsLibbpf, "VPP's af_xdp plugin needs libbpf in the runtime image, as in the stock one")
}

var dockerLabel = regexp.MustCompile(`([a-z0-9.]+)="([^"]*)"`)

// TestDockerfileStampsTheVersion: the build argument VERSION reaches the binary (-version) and
// the image's OCI labels, so a running image says which release it is.
func TestDockerfileStampsTheVersion(t *testing.T) {
	df := loadDockerfile(t)
	runtime := &df.stages[len(df.stages)-1]
	build := df.stage(runtime.copiedFrom(forwarderBinary))
	require.NotNil(t, build)
	requireStageArg(t, build, "VERSION")
	compiled := false
	for _, run := range build.all("RUN") {
		if strings.Contains(run.args, "go build") {
			require.Contains(t, run.args, `-ldflags "-X main.version=${VERSION}"`, "line %d", run.line)
			compiled = true
		}
	}
	require.True(t, compiled)

	labels := map[string]string{}
	for _, label := range runtime.all("LABEL") {
		for _, match := range dockerLabel.FindAllStringSubmatch(label.args, -1) {
			labels[match[1]] = match[2]
		}
	}
	for _, arg := range []string{"VERSION", "REVISION", "CREATED"} {
		requireStageArg(t, runtime, arg)
	}
	require.Equal(t, "${VERSION}", labels["org.opencontainers.image.version"])
	require.Equal(t, "${REVISION}", labels["org.opencontainers.image.revision"])
	require.Equal(t, "${CREATED}", labels["org.opencontainers.image.created"])
	require.Equal(t, "Apache-2.0", labels["org.opencontainers.image.licenses"])
	require.NotEmpty(t, labels["org.opencontainers.image.source"])
}

func requireStageArg(t *testing.T, stage *dockerStage, name string) {
	t.Helper()
	for _, arg := range stage.all("ARG") {
		if declared, _, _ := strings.Cut(arg.args, "="); declared == name {
			return
		}
	}
	t.Fatalf("stage %s does not declare ARG %s", stage.name, name)
}

// TestDockerignoreKeepsBuildOutputOut: binaries, caches and history never reach the build
// context, where they would bloat it, bust layers or end up in the image.
func TestDockerignoreKeepsBuildOutputOut(t *testing.T) {
	patterns := dockerignorePatterns(t)
	for _, path := range []string{".git/HEAD", "bin/forwarder-vpp", ".cache/bin/spire-server", "forwarder-vpp", "test/kind/kind.test", "internal/vpp/vppinit/xdp/afxdp.o"} {
		require.Truef(t, slices.ContainsFunc(patterns, func(pattern string) bool { return dockerignoreMatches(t, pattern, path) }),
			".dockerignore lets %s into the build context", path)
	}
}

func dockerignorePatterns(t *testing.T) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot(t), ".dockerignore"))
	require.NoError(t, err)
	var patterns []string
	for _, line := range strings.Split(string(text), "\n") {
		pattern := strings.Trim(strings.TrimSpace(line), "/")
		if pattern == "" || strings.HasPrefix(pattern, "#") {
			continue
		}
		require.False(t, strings.HasPrefix(pattern, "!"), "exceptions are not modelled: %q", pattern)
		patterns = append(patterns, pattern)
	}
	return patterns
}

// dockerignoreMatches applies one pattern as Docker does for what .dockerignore holds: a pattern
// without a slash matching a file name anywhere only through a leading glob (*.o), and a
// matching directory excluding everything under it.
func dockerignoreMatches(t *testing.T, pattern, path string) bool {
	t.Helper()
	parts := strings.Split(path, "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		matched, err := filepath.Match(pattern, prefix)
		require.NoError(t, err, "bad .dockerignore pattern %q", pattern)
		if matched {
			return true
		}
	}
	if strings.HasPrefix(pattern, "*") {
		matched, _ := filepath.Match(pattern, parts[len(parts)-1])
		return matched
	}
	return false
}
