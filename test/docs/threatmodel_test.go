package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const repoRoot = "../.."

// The threat model backs each claim with a test by name: a renamed or deleted test must not leave
// a claim standing on nothing.
func TestThreatModelIsLinkedAndCitesExistingTests(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	require.Contains(t, string(readme), "(docs/threat-model.md)", "the README must link the threat model")
	model, err := os.ReadFile(filepath.Join(repoRoot, "docs", "threat-model.md"))
	require.NoError(t, err)

	cited := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(model), -1)
	require.NotEmpty(t, cited)
	defined := definedTests(t)
	for _, name := range cited {
		require.True(t, defined[name[1]], "docs/threat-model.md cites %s, which no test defines", name[1])
	}
}

// definedTests are the names of the module's test and fuzz functions.
func definedTests(t *testing.T) map[string]bool {
	t.Helper()
	declaration := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
	defined := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() && strings.HasPrefix(entry.Name(), ".") && path != repoRoot {
			return filepath.SkipDir
		}
		if entry.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		source, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, match := range declaration.FindAllStringSubmatch(string(source), -1) {
			defined[match[1]] = true
		}
		return nil
	})
	require.NoError(t, err)
	return defined
}
