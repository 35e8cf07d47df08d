// Package deviceselector reads the stock forwarder's device selector file
// (NSM_DEVICE_SELECTOR_FILE): which host device carries the vlan mechanism for each "via" label.
//
//	interfaces:
//	  - name: eth1
//	    matches:
//	      - labelSelector:
//	          - via: gw0
//
// The result feeds xconnect.WithVlanDomainToDevice.
package deviceselector
