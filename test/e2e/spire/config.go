package spire

import (
	"fmt"
	"os"
	"path/filepath"
)

// serverConfig is the HCL of a SPIRE server that keeps everything in dir, its CA's keys
// included (so that a restarted server keeps its CA, as NSM's SPIRE deployment does), and
// accepts join-token attestation only.
func serverConfig(dir, trustDomain string, port int) string {
	return fmt.Sprintf(`server {
    bind_address = "127.0.0.1"
    bind_port = "%d"
    socket_path = %q
    trust_domain = %q
    data_dir = %q
    log_level = "WARN"
    ca_ttl = "24h"
    default_x509_svid_ttl = "1h"
}

plugins {
    DataStore "sql" {
        plugin_data {
            database_type = "sqlite3"
            connection_string = %q
        }
    }
    KeyManager "disk" {
        plugin_data {
            keys_path = %q
        }
    }
    NodeAttestor "join_token" {
        plugin_data {}
    }
}
`, port, filepath.Join(dir, "server.sock"), trustDomain, filepath.Join(dir, "data"),
		filepath.Join(dir, "data", "datastore.sqlite3"), filepath.Join(dir, "data", "keys.json"))
}

// agentConfig is the HCL of a SPIRE agent serving the workload API on
// socketPath. discover_workload_path makes the unix attestor emit the
// unix:path selectors our entries use.
func agentConfig(dir, trustDomain, socketPath, bundlePath string, serverPort int) string {
	return fmt.Sprintf(`agent {
    server_address = "127.0.0.1"
    server_port = "%d"
    socket_path = %q
    trust_domain = %q
    trust_bundle_path = %q
    data_dir = %q
    log_level = "WARN"
}

plugins {
    KeyManager "memory" {
        plugin_data {}
    }
    NodeAttestor "join_token" {
        plugin_data {}
    }
    WorkloadAttestor "unix" {
        plugin_data {
            discover_workload_path = true
        }
    }
}
`, serverPort, socketPath, trustDomain, bundlePath, filepath.Join(dir, "data"))
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o600)
}
