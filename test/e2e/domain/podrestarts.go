package domain

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
)

// DeleteNsmgrPod stops node's nsmgr with SIGTERM, as Kubernetes does when its pod is deleted,
// requiring a clean exit, and starts it again with the same environment, as the DaemonSet's new
// pod (no other program knows an nsmgr by its name), returning once it serves.
func (d *Domain) DeleteNsmgrPod(ctx context.Context, node *Node) error {
	if err := d.StopNsmgrPod(node); err != nil {
		return err
	}
	return d.RespawnNsmgr(ctx, node)
}

// StopNsmgrPod stops node's nsmgr with SIGTERM and leaves the node without one, as an nsmgr
// DaemonSet that no longer schedules a pod there; RespawnNsmgr brings it back.
func (d *Domain) StopNsmgrPod(node *Node) error {
	if err := node.Nsmgr.Stop(stopGrace); err != nil {
		return fmt.Errorf("nsmgr-%s on SIGTERM: %w", node.Name, err)
	}
	return nil
}

// RestartSystem deletes NSM's system namespace and applies it again, as heal/*-nsm-system-restart
// do: the registry, every nsmgr and every forwarder get SIGTERM at once, each required to exit
// cleanly; then the registry (empty) and the nsmgrs start again, and every node gets a forwarder
// under a new name (its name with suffix), on the same state directory, as a new pod. The nodes'
// VPPs, external here, stay. It returns once every forwarder is registered.
func (d *Domain) RestartSystem(ctx context.Context, suffix string) error {
	stops := []*process.Process{d.Registry}
	for _, node := range d.Nodes {
		stops = append(stops, node.Nsmgr, node.Forwarder)
	}
	errs := make([]error, len(stops))
	var wg sync.WaitGroup
	for i, p := range stops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Stop(stopGrace); err != nil {
				errs[i] = fmt.Errorf("%s on SIGTERM: %w", p.Name(), err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var err error
	if d.Registry, err = respawn(ctx, d.Registry, "registry serving on"); err != nil {
		return err
	}
	for _, node := range d.Nodes {
		if err = d.RespawnNsmgr(ctx, node); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for _, node := range d.Nodes {
		node.formerForwarderNames = append(node.formerForwarderNames, node.ForwarderName)
		node.ForwarderName += suffix
		if err = d.startForwarder(ctx, node, filepath.Join(d.cfg.WorkDir, node.Name)); err != nil {
			return err
		}
	}
	return nil
}
