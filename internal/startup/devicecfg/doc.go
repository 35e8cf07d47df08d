// Package devicecfg reads the vlan device selector file (NSM_DEVICE_SELECTOR_FILE): which host
// device carries the vlans of each "via" label. The format is the stock forwarder's.
package devicecfg
