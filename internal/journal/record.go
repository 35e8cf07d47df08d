package journal

import (
	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
)

// kernelParameters are the mechanism parameters a kernel cleanup reads.
var kernelParameters = []string{kernel.NetNSURL, kernel.InterfaceNameKey, kernel.VLAN}

// strip returns what a later cleanup needs of conn, or nil when conn has nothing in a client's
// kernel to clean up (its mechanism is not a kernel interface).
func strip(conn *networkservice.Connection) *networkservice.Connection {
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
