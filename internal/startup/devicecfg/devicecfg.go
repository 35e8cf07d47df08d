package devicecfg

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxInterfaceNameLength is the kernel's IFNAMSIZ minus the terminating NUL.
const maxInterfaceNameLength = 15

type file struct {
	Interfaces []device `yaml:"interfaces"`
}

type device struct {
	Name    string  `yaml:"name"`
	Matches []match `yaml:"matches"`
}

type match struct {
	LabelSelector []labels `yaml:"labelSelector"`
}

type labels struct {
	Via string `yaml:"via"`
}

// ReadFile returns the via-label to device-name map described by the selector file at path.
//
// Example file:
//
//	interfaces:
//	  - name: eth1
//	    matches:
//	      - labelSelector:
//	          - via: gw1
func ReadFile(path string) (map[string]string, error) {
	content, err := os.ReadFile(path) //nolint:gosec // the path is the operator's own configuration
	if err != nil {
		return nil, err
	}
	return Parse(content)
}

// Parse returns the via-label to device-name map of a selector document. A via label claimed by
// two devices is an error: a vlan cannot leave through both.
func Parse(content []byte) (map[string]string, error) {
	var parsed file
	decoder := yaml.NewDecoder(bytes.NewReader(content))
	decoder.KnownFields(true)
	if err := decoder.Decode(&parsed); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("not a valid device selector file: %s", strings.Join(strings.Fields(err.Error()), " "))
	}
	viaToDevice := map[string]string{}
	for i, dev := range parsed.Interfaces {
		if dev.Name == "" {
			return nil, fmt.Errorf("interfaces[%d]: name must be set", i)
		}
		if len(dev.Name) > maxInterfaceNameLength {
			return nil, fmt.Errorf("interfaces[%d]: name %q is longer than %d characters", i, dev.Name, maxInterfaceNameLength)
		}
		for j, m := range dev.Matches {
			if len(m.LabelSelector) == 0 {
				return nil, fmt.Errorf("device %s: matches[%d] has no labelSelector", dev.Name, j)
			}
			for _, selector := range m.LabelSelector {
				if selector.Via == "" {
					return nil, fmt.Errorf("device %s: matches[%d] has a labelSelector without via", dev.Name, j)
				}
				if owner, taken := viaToDevice[selector.Via]; taken && owner != dev.Name {
					return nil, fmt.Errorf("via %q is claimed by both %s and %s", selector.Via, owner, dev.Name)
				}
				viaToDevice[selector.Via] = dev.Name
			}
		}
	}
	return viaToDevice, nil
}
