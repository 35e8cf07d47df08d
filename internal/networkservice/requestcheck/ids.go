package requestcheck

import (
	"fmt"
	"strings"

	"github.com/pkg/errors"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

const (
	// maxIDBytes is what a VPP interface tag holds (string[64], NUL-terminated). sdk-vpp tags each
	// interface with its connection's ID, the connection ID of either side is a path segment's,
	// and a longer ID would be cut: its interfaces could never be told as this forwarder's again.
	maxIDBytes = 63
	// maxNameBytes is a DNS name's length, which a pod or service name never exceeds.
	maxNameBytes = 253
)

// checkIDs refuses the IDs and names the forwarder could not keep apart: each must fit a VPP tag
// whole, and a NUL would end the tag early, naming another connection.
func checkIDs(conn *networkservice.Connection) error {
	fields := []boundedString{{"id", conn.GetId(), maxIDBytes}}
	for i, segment := range conn.GetPath().GetPathSegments() {
		fields = append(fields,
			boundedString{fmt.Sprintf("path.pathSegments[%d].id", i), segment.GetId(), maxIDBytes},
			boundedString{fmt.Sprintf("path.pathSegments[%d].name", i), segment.GetName(), maxNameBytes})
	}
	for _, f := range fields {
		switch {
		case len(f.value) > f.bound:
			return errors.Errorf("%s %s is longer than the bound of %d bytes, what a VPP interface tag holds whole", f.field, abbreviate(f.value), f.bound)
		case strings.IndexByte(f.value, 0) >= 0:
			return errors.Errorf("%s %s holds a NUL byte, which would end its VPP interface tag early", f.field, abbreviate(f.value))
		}
	}
	return nil
}

type boundedString struct {
	field, value string
	bound        int
}

// connectionName names a refused connection: by its ID, or by its start when the ID is what was
// refused.
func connectionName(id string) string {
	if len(id) > maxIDBytes || strings.IndexByte(id, 0) >= 0 {
		return abbreviate(id)
	}
	return id
}
