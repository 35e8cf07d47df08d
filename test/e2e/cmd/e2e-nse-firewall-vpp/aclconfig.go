package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/networkservicemesh/govpp/binapi/acl_types"
)

// readACLConfig reads NSM_ACL_CONFIG_PATH in cmd-nse-firewall-vpp's format, what
// features/nse-composition's firewall-config-file holds: a YAML map from a rule's name to a VPP
// ACL rule, each field named as acl_types.ACLRule's in lower case (ispermit, proto,
// srcportoricmptypefirst, ...), an absent one zero (ispermit 0: deny; no prefix: any address).
// cmd-nse-firewall-vpp takes the rules in the map's random order; here they are in the order of
// their names, so that overlapping rules always act the same. Unlike cmd-nse-firewall-vpp,
// which logs a file it cannot read or parse and runs without rules, a bad file stops start-up
// naming the rule and field: a firewall that runs open by mistake lets through what it should
// not. An empty path is no ACL at all (the composition's pass-through endpoints).
func readACLConfig(path string) ([]acl_types.ACLRule, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("NSM_ACL_CONFIG_PATH: %w", err)
	}
	decoder := yaml.NewDecoder(bytes.NewReader(raw))
	decoder.KnownFields(true)
	var byName map[string]acl_types.ACLRule
	if err = decoder.Decode(&byName); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("NSM_ACL_CONFIG_PATH %s: %w", path, err)
	}
	if len(byName) == 0 {
		return nil, fmt.Errorf("NSM_ACL_CONFIG_PATH %s: no rules", path)
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	slices.Sort(names)
	rules := make([]acl_types.ACLRule, 0, len(names))
	for _, name := range names {
		rule := byName[name]
		if rule.IsPermit > acl_types.ACL_ACTION_API_PERMIT_REFLECT {
			return nil, fmt.Errorf("NSM_ACL_CONFIG_PATH %s: rule %q: ispermit %d is none of 0 (deny), 1 (permit), 2 (permit+reflect)",
				path, name, rule.IsPermit)
		}
		rules = append(rules, rule)
	}
	return rules, nil
}
