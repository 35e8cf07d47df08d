package journal

import (
	"strconv"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
)

// ClientInterfaceParameter is the mechanism parameter of a record that holds the sw_if_index of
// the VPP interface behind the client's kernel interface. It is the forwarder's own, never sent on
// the wire: a restarted forwarder reads it to adopt that interface (see package restore).
const ClientInterfaceParameter = "forwarder-vpp.client-sw-if-index"

// kernelParameters are the mechanism parameters a kernel cleanup reads.
var kernelParameters = []string{kernel.NetNSURL, kernel.InterfaceNameKey, kernel.VLAN}

// ClientInterface returns the VPP interface recorded behind conn's client side, if any.
func ClientInterface(conn *networkservice.Connection) (interface_types.InterfaceIndex, bool) {
	index, err := strconv.ParseUint(conn.GetMechanism().GetParameters()[ClientInterfaceParameter], 10, 32)
	if err != nil || index == 0 {
		return 0, false
	}
	return interface_types.InterfaceIndex(index), true
}

// strip returns what a later cleanup needs of conn, or nil when conn has nothing in a client's
// kernel to clean up (its mechanism is not a kernel interface). clientInterface, when not 0, is the
// VPP interface behind the client's kernel interface.
func strip(conn *networkservice.Connection, clientInterface interface_types.InterfaceIndex) *networkservice.Connection {
	mechanism := conn.GetMechanism()
	if conn.GetId() == "" || kernel.ToMechanism(mechanism) == nil {
		return nil
	}
	parameters := map[string]string{}
	for _, key := range kernelParameters {
		if value, ok := mechanism.GetParameters()[key]; ok {
			parameters[key] = value
		}
	}
	if clientInterface != 0 {
		parameters[ClientInterfaceParameter] = strconv.FormatUint(uint64(clientInterface), 10)
	}
	stripped := &networkservice.Connection{
		Id:        conn.GetId(),
		Mechanism: &networkservice.Mechanism{Cls: mechanism.GetCls(), Type: mechanism.GetType(), Parameters: parameters},
	}
	if path := conn.GetPath(); path != nil {
		stripped.Path = &networkservice.Path{Index: path.GetIndex()}
		for _, segment := range path.GetPathSegments() {
			stripped.Path.PathSegments = append(stripped.Path.PathSegments, &networkservice.PathSegment{Id: segment.GetId(), Name: segment.GetName()})
		}
	}
	if ipContext := conn.GetContext().GetIpContext(); ipContext != nil {
		stripped.Context = &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
			SrcIpAddrs: ipContext.GetSrcIpAddrs(),
			DstIpAddrs: ipContext.GetDstIpAddrs(),
			SrcRoutes:  ipContext.GetSrcRoutes(),
			DstRoutes:  ipContext.GetDstRoutes(),
			Policies:   ipContext.GetPolicies(),
		}}
	}
	return stripped.Clone()
}
