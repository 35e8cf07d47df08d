package domain

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"time"
)

// SimInterface is one interface of a simulated VPP.
type SimInterface struct {
	SwIfIndex uint32 `json:"sw_if_index"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Tag       string `json:"tag"`
}

// SimulatorState is the simulator's own human-readable interface table.
func (d *Domain) SimulatorState(ctx context.Context, node *Node) (string, error) {
	return d.simulatorShow(ctx, node)
}

// SimulatorInterfaces lists node's simulator interfaces by sw_if_index.
func (d *Domain) SimulatorInterfaces(ctx context.Context, node *Node) ([]SimInterface, error) {
	out, err := d.simulatorShow(ctx, node, "--json")
	if err != nil {
		return nil, err
	}
	var snapshot struct {
		State struct {
			Interfaces map[string]SimInterface `json:"interfaces"`
		} `json:"state"`
	}
	if err = json.Unmarshal([]byte(out), &snapshot); err != nil {
		return nil, fmt.Errorf("vppsim show --json on %s: %w", node.Name, err)
	}
	var interfaces []SimInterface
	for _, i := range snapshot.State.Interfaces {
		interfaces = append(interfaces, i)
	}
	sort.Slice(interfaces, func(a, b int) bool { return interfaces[a].SwIfIndex < interfaces[b].SwIfIndex })
	return interfaces, nil
}

func (d *Domain) simulatorShow(ctx context.Context, node *Node, flags ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := append([]string{"show", "--state-socket", node.StateSocket}, flags...)
	out, err := exec.CommandContext(ctx, d.cfg.Binaries.Simulator, args...).Output()
	if err != nil {
		var stderr []byte
		if exitErr, ok := err.(*exec.ExitError); ok {
			stderr = exitErr.Stderr
		}
		return "", fmt.Errorf("vppsim show on %s: %w: %s", node.Name, err, stderr)
	}
	return string(out), nil
}
