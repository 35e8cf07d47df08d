package requestcheck

import (
	"fmt"
	"net"
	"strings"

	"github.com/pkg/errors"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns"
)

// check returns why request must be refused, naming the field, or nil. It runs the bounds first, so
// that an oversized Request costs no parsing, and reads nothing but the Request.
func check(request *networkservice.NetworkServiceRequest, limits *Limits) error {
	if err := checkLimits(request, limits); err != nil {
		return err
	}
	if err := checkIDs(request.GetConnection()); err != nil {
		return err
	}
	if err := recvnetns.CheckWire(request); err != nil {
		return err
	}
	if mechanism := request.GetConnection().GetMechanism(); mechanism != nil {
		if err := checkMechanism("mechanism", mechanism); err != nil {
			return err
		}
	}
	for i, mechanism := range request.GetMechanismPreferences() {
		if err := checkMechanism(fmt.Sprintf("mechanismPreferences[%d]", i), mechanism); err != nil {
			return err
		}
	}
	return checkIPContext(request.GetConnection().GetContext().GetIpContext())
}

func checkMechanism(field string, mechanism *networkservice.Mechanism) error {
	kernelMechanism := kernel.ToMechanism(mechanism)
	if kernelMechanism == nil {
		return nil
	}
	if name := kernelMechanism.GetInterfaceName(); name != "" {
		if err := checkInterfaceName(name); err != nil {
			return errors.Wrapf(err, "%s.parameters.%s %q", field, kernel.InterfaceNameKey, name)
		}
	}
	return nil
}

// checkInterfaceName applies the kernel's rules for link names (dev_valid_name).
func checkInterfaceName(name string) error {
	switch {
	case len(name) > kernel.LinuxIfMaxLength:
		return errors.Errorf("is longer than %d characters", kernel.LinuxIfMaxLength)
	case name == "." || name == "..":
		return errors.New("is not a valid interface name")
	case strings.ContainsAny(name, "/: \t\n"):
		return errors.New("contains '/', ':' or white space")
	}
	return nil
}

// checkIPContext matters beyond tidy errors: sdk's helpers turn an unparsable address or prefix
// into nil and the kernel elements then silently skip it.
func checkIPContext(ipContext *networkservice.IPContext) error {
	for _, addresses := range []struct {
		field  string
		values []string
	}{
		{"srcIpAddrs", ipContext.GetSrcIpAddrs()},
		{"dstIpAddrs", ipContext.GetDstIpAddrs()},
	} {
		for i, address := range addresses.values {
			if _, _, err := net.ParseCIDR(address); err != nil {
				return errors.Errorf("context.ipContext.%s[%d] %q is not an address/prefix", addresses.field, i, address)
			}
		}
	}
	for _, routes := range []struct {
		field  string
		values []*networkservice.Route
	}{
		{"srcRoutes", ipContext.GetSrcRoutes()},
		{"dstRoutes", ipContext.GetDstRoutes()},
	} {
		for i, route := range routes.values {
			if err := checkRoute(route); err != nil {
				return errors.Wrapf(err, "context.ipContext.%s[%d]", routes.field, i)
			}
		}
	}
	for i, neighbor := range ipContext.GetIpNeighbors() {
		if net.ParseIP(neighbor.GetIp()) == nil {
			return errors.Errorf("context.ipContext.ipNeighbors[%d].ip %q is not an IP address", i, neighbor.GetIp())
		}
		if _, err := net.ParseMAC(neighbor.GetHardwareAddress()); err != nil {
			return errors.Errorf("context.ipContext.ipNeighbors[%d].hardwareAddress %q is not a MAC address", i, neighbor.GetHardwareAddress())
		}
	}
	return nil
}

func checkRoute(route *networkservice.Route) error {
	if _, _, err := net.ParseCIDR(route.GetPrefix()); err != nil {
		return errors.Errorf("prefix %q is not an address/prefix", route.GetPrefix())
	}
	if nextHop := route.GetNextHop(); nextHop != "" && net.ParseIP(nextHop) == nil {
		return errors.Errorf("nextHop %q is not an IP address", nextHop)
	}
	return nil
}
