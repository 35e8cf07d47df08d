package requestcheck

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

// Limit is one bound on a Request and the setting that raises it, named when a Request exceeds it.
type Limit struct {
	Max     int
	Setting string
}

// Limits bound every repeated field of a Request. Each entry costs memory, and most cost kernel or
// VPP writes, so without them a single Request could stall the forwarder.
type Limits struct {
	// MechanismPreferences bounds mechanismPreferences.
	MechanismPreferences Limit
	// PathSegments bounds path.pathSegments.
	PathSegments Limit
	// Labels bounds the entries of labels and of every other string map: context.extraContext, a
	// mechanism's parameters, a path segment's metrics.
	Labels Limit
	// LabelSize bounds the bytes of each key and value of those maps.
	LabelSize Limit
	// Addresses bounds context.ipContext.srcIpAddrs and dstIpAddrs.
	Addresses Limit
	// Routes bounds context.ipContext.srcRoutes and dstRoutes.
	Routes Limit
	// Policies bounds context.ipContext.policies.
	Policies Limit
	// PolicyRoutes bounds the routes of each policy.
	PolicyRoutes Limit
	// Prefixes bounds context.ipContext.excludedPrefixes, extraPrefixes and extraPrefixRequest.
	Prefixes Limit
	// Neighbors bounds context.ipContext.ipNeighbors.
	Neighbors Limit
	// DNSEntries bounds context.dnsContext.configs and each config's dnsServerIps and searchDomains.
	DNSEntries Limit
}

// DefaultLimits are generous for every deployment seen so far: a Request carries a handful of each.
func DefaultLimits() Limits {
	return Limits{
		MechanismPreferences: Limit{16, "NSM_MAX_REQUEST_MECHANISMS"},
		PathSegments:         Limit{32, "NSM_MAX_REQUEST_PATH_SEGMENTS"},
		Labels:               Limit{64, "NSM_MAX_REQUEST_LABELS"},
		LabelSize:            Limit{4096, "NSM_MAX_REQUEST_LABEL_SIZE"},
		Addresses:            Limit{64, "NSM_MAX_REQUEST_ADDRESSES"},
		Routes:               Limit{1024, "NSM_MAX_REQUEST_ROUTES"},
		Policies:             Limit{1024, "NSM_MAX_REQUEST_POLICIES"},
		PolicyRoutes:         Limit{64, "NSM_MAX_REQUEST_POLICY_ROUTES"},
		Prefixes:             Limit{1024, "NSM_MAX_REQUEST_PREFIXES"},
		Neighbors:            Limit{256, "NSM_MAX_REQUEST_NEIGHBORS"},
		DNSEntries:           Limit{32, "NSM_MAX_REQUEST_DNS_ENTRIES"},
	}
}

// countLimit is one repeated field's length against its limit.
type countLimit struct {
	field string
	count int
	limit Limit
}

func (c countLimit) check() error {
	if c.count > c.limit.Max {
		return errors.Errorf("%s has %d entries, more than the bound of %d (%s)", c.field, c.count, c.limit.Max, c.limit.Setting)
	}
	return nil
}

// checkLimits runs before any other check, so that an oversized Request costs no parsing.
func checkLimits(request *networkservice.NetworkServiceRequest, limits *Limits) error {
	conn := request.GetConnection()
	ipContext := conn.GetContext().GetIpContext()
	counts := []countLimit{
		{"mechanismPreferences", len(request.GetMechanismPreferences()), limits.MechanismPreferences},
		{"path.pathSegments", len(conn.GetPath().GetPathSegments()), limits.PathSegments},
		{"context.ipContext.srcIpAddrs", len(ipContext.GetSrcIpAddrs()), limits.Addresses},
		{"context.ipContext.dstIpAddrs", len(ipContext.GetDstIpAddrs()), limits.Addresses},
		{"context.ipContext.srcRoutes", len(ipContext.GetSrcRoutes()), limits.Routes},
		{"context.ipContext.dstRoutes", len(ipContext.GetDstRoutes()), limits.Routes},
		{"context.ipContext.policies", len(ipContext.GetPolicies()), limits.Policies},
		{"context.ipContext.excludedPrefixes", len(ipContext.GetExcludedPrefixes()), limits.Prefixes},
		{"context.ipContext.extraPrefixes", len(ipContext.GetExtraPrefixes()), limits.Prefixes},
		{"context.ipContext.extraPrefixRequest", len(ipContext.GetExtraPrefixRequest()), limits.Prefixes},
		{"context.ipContext.ipNeighbors", len(ipContext.GetIpNeighbors()), limits.Neighbors},
		{"context.dnsContext.configs", len(conn.GetContext().GetDnsContext().GetConfigs()), limits.DNSEntries},
	}
	for _, c := range counts {
		if err := c.check(); err != nil {
			return err
		}
	}
	for i, policy := range ipContext.GetPolicies() {
		if err := (countLimit{fmt.Sprintf("context.ipContext.policies[%d].routes", i), len(policy.GetRoutes()), limits.PolicyRoutes}).check(); err != nil {
			return err
		}
	}
	for i, config := range conn.GetContext().GetDnsContext().GetConfigs() {
		for _, c := range []countLimit{
			{fmt.Sprintf("context.dnsContext.configs[%d].dnsServerIps", i), len(config.GetDnsServerIps()), limits.DNSEntries},
			{fmt.Sprintf("context.dnsContext.configs[%d].searchDomains", i), len(config.GetSearchDomains()), limits.DNSEntries},
		} {
			if err := c.check(); err != nil {
				return err
			}
		}
	}
	return checkMaps(request, limits)
}

// stringMap is one map field of a Request.
type stringMap struct {
	field   string
	entries map[string]string
}

// checkMaps bounds every string map: its entries, and the size of each key and value.
func checkMaps(request *networkservice.NetworkServiceRequest, limits *Limits) error {
	conn := request.GetConnection()
	maps := []stringMap{
		{"labels", conn.GetLabels()},
		{"context.extraContext", conn.GetContext().GetExtraContext()},
		{"mechanism.parameters", conn.GetMechanism().GetParameters()},
	}
	for i, mechanism := range request.GetMechanismPreferences() {
		maps = append(maps, stringMap{fmt.Sprintf("mechanismPreferences[%d].parameters", i), mechanism.GetParameters()})
	}
	for i, segment := range conn.GetPath().GetPathSegments() {
		maps = append(maps, stringMap{fmt.Sprintf("path.pathSegments[%d].metrics", i), segment.GetMetrics()})
	}
	for _, m := range maps {
		if err := (countLimit{m.field, len(m.entries), limits.Labels}).check(); err != nil {
			return err
		}
		for key, value := range m.entries {
			if len(key) > limits.LabelSize.Max || len(value) > limits.LabelSize.Max {
				return errors.Errorf("%s entry %s is longer than the bound of %d bytes (%s)",
					m.field, abbreviate(key), limits.LabelSize.Max, limits.LabelSize.Setting)
			}
		}
	}
	return nil
}

// abbreviate quotes the start of s: an error names an oversized key without repeating it whole.
func abbreviate(s string) string {
	const keep = 32
	if len(s) <= keep {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:keep], len(s))
}
