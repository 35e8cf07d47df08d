package domain

// WithStrictIPAM gives the endpoint cmd-nse-icmp-responder's strict IPAM policy (e2e-nse's
// NSM_IPAM_POLICY=strict): the addresses a client brings from outside the endpoint's prefixes,
// those of an endpoint it healed from, are dropped from its connection.
func WithStrictIPAM() EndpointOption {
	return func(env []string) []string {
		return append(env, "NSM_IPAM_POLICY=strict")
	}
}
