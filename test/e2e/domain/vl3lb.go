package domain

import (
	"context"
	"fmt"
	"strconv"
)

// Vl3LoadBalancer is the configuration of a vl3 load balancer, as deployments-k8s's
// apps/vl3-lb sets cmd-lb-vl3-vpp's: the labels of the vl3 clients it balances over
// (key:value), the protocol (TCP or UDP), its port and the servers' port.
type Vl3LoadBalancer struct {
	Selector   string
	Protocol   string
	Port       int
	TargetPort int
}

// StartVl3LoadBalancer connects a vl3 load balancer (e2e-nsc with NSM_SELECTOR, its balancing
// in its pod's kernel) to service in a new pod on node, and waits until its connection is
// granted. Its podName label is name, which makes name.service its DNS name in the vl3 network,
// as upstream's POD_NAME does.
func (d *Domain) StartVl3LoadBalancer(ctx context.Context, node *Node, name, service string, lb Vl3LoadBalancer) (*Client, error) {
	env := []string{
		"NSM_SELECTOR=" + lb.Selector,
		"NSM_PROTOCOL=" + lb.Protocol,
		"NSM_PORT=" + strconv.Itoa(lb.Port),
		"NSM_TARGET_PORT=" + strconv.Itoa(lb.TargetPort),
	}
	c, err := d.StartClientWithEnv(node, name, env, fmt.Sprintf("kernel://%s/nsm-1?podName=%s", service, name))
	if err != nil {
		return nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	return c, c.WaitGranted(waitCtx)
}

// WaitBalancing waits until the load balancer balances over exactly servers servers.
func (c *Client) WaitBalancing(ctx context.Context, servers int) error {
	return waitForLogLine(ctx, c.Proc, 0, fmt.Sprintf("balances over %d servers", servers))
}
