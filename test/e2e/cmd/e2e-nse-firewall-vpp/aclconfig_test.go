package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/govpp/binapi/acl_types"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// The nse-composition firewall's rules: ICMP and TCP to 8080 let through, TCP to 80 not.
func TestReadACLConfigCompositionFirewall(t *testing.T) {
	path := writeConfig(t, `
permit-tcp-8080:
  ispermit: 1
  proto: 6
  srcportoricmptypelast: 65535
  dstportoricmpcodefirst: 8080
  dstportoricmpcodelast: 8080
deny-tcp-80:
  proto: 6
  srcportoricmptypelast: 65535
  dstportoricmpcodefirst: 80
  dstportoricmpcodelast: 80
permit-icmp:
  ispermit: 1
  proto: 1
  srcportoricmptypelast: 65535
  dstportoricmpcodelast: 65535
`)
	rules, err := readACLConfig(path)
	require.NoError(t, err)
	anywhere := ip_types.Prefix{}
	require.Equal(t, []acl_types.ACLRule{
		{IsPermit: acl_types.ACL_ACTION_API_DENY, Proto: ip_types.IP_API_PROTO_TCP, SrcPrefix: anywhere, DstPrefix: anywhere,
			SrcportOrIcmptypeLast: 65535, DstportOrIcmpcodeFirst: 80, DstportOrIcmpcodeLast: 80},
		{IsPermit: acl_types.ACL_ACTION_API_PERMIT, Proto: ip_types.IP_API_PROTO_ICMP,
			SrcportOrIcmptypeLast: 65535, DstportOrIcmpcodeLast: 65535},
		{IsPermit: acl_types.ACL_ACTION_API_PERMIT, Proto: ip_types.IP_API_PROTO_TCP,
			SrcportOrIcmptypeLast: 65535, DstportOrIcmpcodeFirst: 8080, DstportOrIcmpcodeLast: 8080},
	}, rules, "in the order of their names")
}

func TestReadACLConfigNoPathIsNoACL(t *testing.T) {
	rules, err := readACLConfig("")
	require.NoError(t, err)
	require.Empty(t, rules)
}

// A firewall must not start open because of a bad file: each error names the file and what is
// wrong in it.
func TestReadACLConfigRejectsBadFiles(t *testing.T) {
	for _, bad := range []struct{ name, text, want string }{
		{"unknown field", "allow icmp:\n  ispermit: 1\n  protocol: 1\n", "field protocol not found"},
		{"bad action", "allow icmp:\n  ispermit: 3\n  proto: 1\n", `rule "allow icmp": ispermit 3`},
		{"port out of range", "allow tcp:\n  ispermit: 1\n  dstportoricmpcodefirst: 70000\n", "70000"},
		{"not a map", "- ispermit: 1\n", "cannot unmarshal"},
		{"empty", "", "no rules"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			path := writeConfig(t, bad.text)
			_, err := readACLConfig(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), path)
			require.Contains(t, err.Error(), bad.want)
		})
	}
	_, err := readACLConfig(filepath.Join(t.TempDir(), "absent.yaml"))
	require.ErrorContains(t, err, "NSM_ACL_CONFIG_PATH")
}
