package deviceselector

import (
	"bytes"
	"io"
	"os"

	"github.com/pkg/errors"
	"gopkg.in/yaml.v3"
)

// linuxIfNameMax is the longest name the kernel accepts for a link (IFNAMSIZ minus the NUL).
const linuxIfNameMax = 15

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

// Load reads the file at path and returns the device for each via label. As in the stock
// forwarder, when several devices claim the same label the last one in the file wins. An empty
// file, or one without interfaces, gives an empty map.
func Load(path string) (map[string]string, error) {
	content, err := os.ReadFile(path) // #nosec G304 -- the operator names this file
	if err != nil {
		return nil, errors.Wrap(err, "reading the device selector file")
	}
	return parse(path, content)
}

func parse(path string, content []byte) (map[string]string, error) {
	var parsed file
	decoder := yaml.NewDecoder(bytes.NewReader(content))
	decoder.KnownFields(true)
	if err := decoder.Decode(&parsed); err != nil && !errors.Is(err, io.EOF) {
		return nil, errors.Wrapf(err, "device selector file %s", path)
	}
	viaToDevice := map[string]string{}
	for i, dev := range parsed.Interfaces {
		if err := validate(dev); err != nil {
			return nil, errors.Wrapf(err, "device selector file %s: interfaces[%d]", path, i)
		}
		for _, m := range dev.Matches {
			for _, l := range m.LabelSelector {
				viaToDevice[l.Via] = dev.Name
			}
		}
	}
	return viaToDevice, nil
}

func validate(dev device) error {
	if dev.Name == "" {
		return errors.New("name is empty")
	}
	if len(dev.Name) > linuxIfNameMax {
		return errors.Errorf("name %q is longer than %d characters", dev.Name, linuxIfNameMax)
	}
	if len(dev.Matches) == 0 {
		return errors.Errorf("device %s has no matches", dev.Name)
	}
	for j, m := range dev.Matches {
		if len(m.LabelSelector) == 0 {
			return errors.Errorf("device %s: matches[%d] has no labelSelector", dev.Name, j)
		}
		for k, l := range m.LabelSelector {
			if l.Via == "" {
				return errors.Errorf("device %s: matches[%d].labelSelector[%d] has no via label", dev.Name, j, k)
			}
		}
	}
	return nil
}
