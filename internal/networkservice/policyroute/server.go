package policyroute

import (
	"context"
	stderrors "errors"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/postpone"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
)

type policyRouteServer struct {
	opts *options
}

// NewServer returns a chain element that installs the connection's policy routes in the client namespace of a
// kernel mechanism; a drop-in for sdk-kernel's iprule.NewServer(). It panics on an invalid option.
func NewServer(opts ...Option) networkservice.NetworkServiceServer {
	return &policyRouteServer{opts: newOptions(opts)}
}

func (s *policyRouteServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	// Invalid input fails before the rest of the chain runs, so nothing at all is written for it.
	if _, err := parsePolicies(request.GetConnection().GetContext().GetIpContext().GetPolicies()); err != nil {
		return nil, err
	}
	postponeCtxFunc := postpone.ContextWithValues(ctx)

	conn, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		return nil, err
	}
	// The chain may have changed the context; what it returns is what gets installed.
	policies, err := parsePolicies(conn.GetContext().GetIpContext().GetPolicies())
	if err == nil {
		err = s.apply(ctx, conn, policies, false)
	}
	if err != nil {
		closeCtx, cancelClose := postponeCtxFunc()
		defer cancelClose()
		if _, closeErr := s.Close(closeCtx, conn); closeErr != nil {
			err = errors.Wrapf(err, "connection closed with error: %s", closeErr.Error())
		}
		return nil, err
	}
	return conn, nil
}

func (s *policyRouteServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	policies, err := parsePolicies(conn.GetContext().GetIpContext().GetPolicies())
	if err != nil {
		log.FromContext(ctx).Warnf("policyroute: closing with invalid policies, removing what the link proves ours: %v", err)
	}
	// The rest of the chain closes whatever happened here; the error goes up so that the journal
	// keeps the connection for a retried cleanup.
	applyErr := s.apply(ctx, conn, policies, true)
	if applyErr != nil {
		log.FromContext(ctx).Errorf("policyroute: failed to remove policy routes: %v", applyErr)
	}
	_, err = next.Server(ctx).Close(ctx, conn)
	if err = stderrors.Join(applyErr, err); err != nil {
		return nil, err
	}
	return &empty.Empty{}, nil
}

// apply reconciles the connection's policy rules and routes; closing removes all of them.
func (s *policyRouteServer) apply(ctx context.Context, conn *networkservice.Connection, policies []policy, closing bool) error {
	holder := holderKey(conn.GetId())
	mechanism := kernel.ToMechanism(conn.GetMechanism())
	if mechanism == nil || mechanism.GetVLAN() != 0 {
		s.opts.registry.Release(holder)
		return nil
	}
	if closing {
		// Whatever happens below, this connection no longer keeps the namespace's view open.
		defer s.opts.registry.Release(holder)
	}
	view, done, err := s.opts.registry.Open(mechanism.GetNetNSURL())
	if err != nil {
		return err
	}
	defer done()

	// A Close naming no interface is of a connection whose link is gone or now another's: only what
	// its ID proves its own is removed, never routes through a link of that name.
	var link int
	var linkErr error
	if name := mechanism.GetInterfaceName(); name != "" || !closing {
		link, _, linkErr = view.Link(name)
	}
	if linkErr != nil && !closing {
		return errors.Wrapf(linkErr, "policyroute: no interface %s", mechanism.GetInterfaceName())
	}

	p, err := s.plan(view, conn.GetId(), link, policies, closing)
	if err != nil {
		return err
	}
	log.FromContext(ctx).WithField("policyroute", "apply").
		Debugf("adopted %d, route writes %d, rule adds %d, rule deletes %d, route deletes %d",
			p.adopted, len(p.routeWrites), len(p.ruleAdds), len(p.ruleDeletes), len(p.routeDeletes))
	ops := p.ops()
	if err := view.Write(ops); err != nil {
		return err
	}
	fwdmetrics.PolicyRouteWrites(ctx, p.adopted, ops)
	if !closing {
		s.opts.registry.Hold(holder, view)
	}
	return nil
}

// holderKey names what this element holds a namespace's view for; other elements sharing the registry hold
// it under keys of their own.
func holderKey(connID string) string {
	return "policyroute/" + connID
}

func (s *policyRouteServer) plan(view *routeview.View, connID string, link int, policies []policy, closing bool) (*plan, error) {
	r := newReconciler(view, s.opts, connID, link)
	p := &plan{}
	var candidates [][]uint32
	if !closing {
		tables, probed, err := r.chooseTables(policies)
		if err != nil {
			return nil, err
		}
		if err := r.planPolicies(p, policies, tables); err != nil {
			return nil, err
		}
		candidates = probed
	} else {
		for i := range policies {
			candidates = append(candidates, r.probes.candidates(policies[i].sel))
		}
	}
	r.planLeftovers(p, policies, candidates)
	return p, nil
}
