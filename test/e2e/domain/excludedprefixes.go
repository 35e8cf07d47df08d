package domain

import (
	"os"
	"path/filepath"
	"strings"
)

// writeNsmgrConfig gives node's nsmgr the directory that stands for its pod's config volume
// (e2e-nsmgr's NSM_CONFIG_DIR), holding excluded_prefixes.yaml with Config.ExcludedPrefixes as
// the cmd-exclude-prefixes-k8s sidecar writes it from the cluster's ConfigMap; nothing when the
// domain has none.
func (d *Domain) writeNsmgrConfig(dir string) ([]string, error) {
	if d.cfg.ExcludedPrefixes == nil {
		return nil, nil
	}
	configDir := filepath.Join(dir, "nsmgr-config")
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		return nil, err
	}
	var yaml strings.Builder
	yaml.WriteString("prefixes:\n")
	for _, prefix := range d.cfg.ExcludedPrefixes {
		yaml.WriteString("- " + prefix + "\n")
	}
	if err := os.WriteFile(filepath.Join(configDir, "excluded_prefixes.yaml"), []byte(yaml.String()), 0o644); err != nil {
		return nil, err
	}
	return []string{"NSM_CONFIG_DIR=" + configDir}, nil
}
