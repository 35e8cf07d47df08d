package linkroutes

import (
	"context"
	stderrors "errors"
	"fmt"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
)

// linkRoutes does the work of both sides' elements.
type linkRoutes struct {
	registry *routeview.Registry
	isClient bool
	// holderPrefix tells this element's hold on a namespace's view from the other elements' holds.
	holderPrefix string
}

// validate refuses a bad IP context before the rest of the chain creates anything for it.
func (l *linkRoutes) validate(conn *networkservice.Connection) error {
	_, err := desiredRoutes(conn.GetContext().GetIpContext(), l.isClient, 0, l.registry.Mark())
	return err
}

// reconcile brings the marked main-table routes through the connection's interface to the desired set,
// writing only the difference. A desired route whose slot holds a route the forwarder did not install fails
// the Request before anything is written: replacing it would take over, and on Close delete, the namespace's
// own route (its default route, the pod network).
func (l *linkRoutes) reconcile(ctx context.Context, conn *networkservice.Connection) error {
	mechanism := kernel.ToMechanism(conn.GetMechanism())
	if mechanism == nil || mechanism.GetVLAN() != 0 {
		l.registry.Release(l.holder(conn))
		return nil
	}
	view, done, err := l.registry.Open(mechanism.GetNetNSURL())
	if err != nil {
		return err
	}
	defer done()
	link, up, err := view.Link(mechanism.GetInterfaceName())
	if err != nil {
		return errors.Wrapf(err, "finding interface %s", mechanism.GetInterfaceName())
	}
	desired, err := desiredRoutes(conn.GetContext().GetIpContext(), l.isClient, link, view.Mark())
	if err != nil {
		return err
	}
	ops, err := plan(view, link, desired)
	if err != nil {
		return err
	}
	if len(desired) > 0 && !up {
		if err := view.SetLinkUp(link); err != nil {
			return errors.Wrapf(err, "setting %s up", mechanism.GetInterfaceName())
		}
	}
	log.FromContext(ctx).WithField("linkroutes", "reconcile").Debugf("%d desired routes on %s, %d writes", len(desired), mechanism.GetInterfaceName(), len(ops))
	if err := view.Write(ops); err != nil {
		return err
	}
	fwdmetrics.LinkRouteWrites(ctx, adopted(len(desired), ops), ops)
	l.registry.Hold(l.holder(conn), view)
	return nil
}

// plan lists the writes: new and changed routes first, so traffic always has a route, then deletions.
func plan(view *routeview.View, link int, desired map[routeview.Slot]*desiredRoute) ([]routeview.Op, error) {
	var writes, deletes []routeview.Op
	for slot, want := range desired {
		op, err := write(view, link, &want.route, view.RoutesAt(slot))
		if err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "%s: %v", want.field, err)
		}
		if op != nil {
			writes = append(writes, *op)
		}
	}
	for route := range view.MarkedVia(link) {
		if _, ok := desired[route.Slot()]; !ok && route.Table == routeview.MainTable {
			deletes = append(deletes, route.DeleteOp())
		}
	}
	return append(writes, deletes...), nil
}

// adopted is how many of the desired routes needed no write.
func adopted(desired int, ops []routeview.Op) int {
	for _, op := range ops {
		if op.Kind() != routeview.OpDeleted {
			desired--
		}
	}
	return desired
}

// write is what puts want into a slot holding actual: nothing when it is there, or when the kernel's own
// route for the interface's address does the same; a replace when the slot holds a route of the
// forwarder's; an exclusive add into an empty slot; an error when someone else's route is in the way.
func write(view *routeview.View, link int, want *routeview.Route, actual []routeview.Route) (*routeview.Op, error) {
	ours, equivalent := false, false
	var foreign *routeview.Route
	for i := range actual {
		a := &actual[i]
		switch {
		case a.Protocol == view.Mark() && a.Oif == link && sameRoute(want, a):
			return nil, nil
		case a.Protocol == view.Mark():
			ours = true
		case a.Oif == link && sameNextHop(want, a):
			equivalent = true
		default:
			foreign = a
		}
	}
	switch {
	case foreign != nil:
		return nil, foreignRouteError{want: want, foreign: foreign}
	case ours:
		op := want.ReplaceOp()
		return &op, nil
	case equivalent:
		return nil, nil
	}
	op := want.AddOp()
	return &op, nil
}

// sameRoute compares what this element sets.
func sameRoute(want, have *routeview.Route) bool {
	return have.Plain && sameNextHop(want, have) && want.Onlink == have.Onlink
}

// sameNextHop compares where the routes send traffic. IPv6 routes have no scope in the kernel (it
// reports universe for all of them), so scope only counts for IPv4.
func sameNextHop(want, have *routeview.Route) bool {
	return want.Oif == have.Oif && want.Gw == have.Gw && have.Type == unix.RTN_UNICAST &&
		(want.Family == unix.AF_INET6 || want.Scope == have.Scope)
}

// removeAll deletes every marked main-table route through the connection's interface. An interface that is
// gone took its routes with it.
func (l *linkRoutes) removeAll(ctx context.Context, conn *networkservice.Connection) error {
	defer l.registry.Release(l.holder(conn))
	mechanism := kernel.ToMechanism(conn.GetMechanism())
	// Without an interface (its link is gone, or now another connection's) there is nothing to
	// remove: main-table routes through the connection's link went with it.
	if mechanism == nil || mechanism.GetVLAN() != 0 || mechanism.GetInterfaceName() == "" {
		return nil
	}
	view, done, err := l.registry.Open(mechanism.GetNetNSURL())
	if err != nil {
		return err
	}
	defer done()
	link, _, err := view.Link(mechanism.GetInterfaceName())
	if errors.Is(err, unix.ENODEV) {
		return nil
	}
	if err != nil {
		return errors.Wrapf(err, "finding interface %s", mechanism.GetInterfaceName())
	}
	var deletes []routeview.Op
	for route := range view.MarkedVia(link) {
		if route.Table == routeview.MainTable {
			deletes = append(deletes, route.DeleteOp())
		}
	}
	if err := view.Write(deletes); err != nil {
		return err
	}
	fwdmetrics.LinkRouteWrites(ctx, 0, deletes)
	return nil
}

func (l *linkRoutes) holder(conn *networkservice.Connection) string {
	return l.holderPrefix + conn.GetId()
}

// foreignRouteError is a desired route whose slot holds a route the forwarder did not install.
type foreignRouteError struct {
	want, foreign *routeview.Route
}

func (e foreignRouteError) Error() string {
	return fmt.Sprintf("route %s would replace the namespace's route %s via %v dev %d proto %d, which the forwarder did not install; it is left as it is",
		e.want.Dst, e.foreign.Dst, e.foreign.Gw, e.foreign.Oif, e.foreign.Protocol)
}

// closed is a Close's answer once the rest of the chain closed whatever happened here: the routes'
// removal error goes up with the chain's, so that the journal keeps the connection for a retried cleanup.
func closed(ctx context.Context, removeErr, chainErr error) (*empty.Empty, error) {
	if removeErr != nil {
		log.FromContext(ctx).Warnf("linkroutes: %v", removeErr)
	}
	if err := stderrors.Join(removeErr, chainErr); err != nil {
		return nil, err
	}
	return &empty.Empty{}, nil
}
