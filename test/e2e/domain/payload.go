package domain

// WithPayload registers the endpoint's network service with payload ("ETHERNET", the default,
// or "IP"; e2e-nse's NSM_PAYLOAD). The forwarders choose remote mechanisms by it: VXLAN carries
// Ethernet, wireguard and IPsec carry IP.
func WithPayload(payload string) EndpointOption {
	return func(env []string) []string {
		return append(env, "NSM_PAYLOAD="+payload)
	}
}
