package main

import (
	"fmt"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

// readPoliciesFile reads NSM_POLICIES_FILE: a YAML list of policies in the
// format cmd-nse-icmp-responder reads from /etc/policy-based-routing/config.yaml
// (from, proto, srcport, dstport, routes of prefix and nexthop), handed to
// every client as they are by sdk's policyroute server, which also gives the
// client each policy's source address, as the stock endpoint does.
func readPoliciesFile(path string) ([]*networkservice.PolicyRoute, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("NSM_POLICIES_FILE: %w", err)
	}
	var policies []*networkservice.PolicyRoute
	if err = yaml.Unmarshal(data, &policies); err != nil {
		return nil, fmt.Errorf("NSM_POLICIES_FILE %s: %w", path, err)
	}
	return policies, nil
}
