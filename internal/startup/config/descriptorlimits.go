package config

import "strconv"

// checkDescriptorLimits refuses a cap below one, which would fail every Request that passes a
// namespace, and a per-peer cap above the total, which would never apply.
func (c *Config) checkDescriptorLimits() error {
	for _, limit := range []struct {
		variable string
		value    int
	}{
		{"NSM_MAX_HELD_DESCRIPTORS_PER_PEER", c.MaxHeldDescriptorsPerPeer},
		{"NSM_MAX_HELD_DESCRIPTORS", c.MaxHeldDescriptors},
	} {
		if limit.value < 1 {
			return &ValueError{Variable: limit.variable, Value: rawValue(limit.variable, strconv.Itoa(limit.value)), Reason: "must be a positive number"}
		}
	}
	if c.MaxHeldDescriptorsPerPeer > c.MaxHeldDescriptors {
		return &ValueError{
			Variable: "NSM_MAX_HELD_DESCRIPTORS_PER_PEER", Value: rawValue("NSM_MAX_HELD_DESCRIPTORS_PER_PEER", strconv.Itoa(c.MaxHeldDescriptorsPerPeer)),
			Reason: "must not exceed NSM_MAX_HELD_DESCRIPTORS=" + strconv.Itoa(c.MaxHeldDescriptors),
		}
	}
	return nil
}
