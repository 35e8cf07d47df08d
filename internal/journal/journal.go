package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/pkg/errors"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

const (
	fileSuffix = ".json"
	tempPrefix = ".tmp-"
)

// Journal is the set of recorded connections in one directory. It is safe for concurrent use. A nil
// *Journal records nothing.
type Journal struct {
	dir string

	mu      sync.Mutex
	entries map[string]*entry
}

// entry is one connection's record; its lock orders the file writes of that connection.
type entry struct {
	mu   sync.Mutex
	conn *networkservice.Connection // nil until recorded, and once forgotten
	// detached is set when Forget takes the entry out of the map.
	detached bool
}

// Open uses dir (created if missing) as the journal and loads what it holds. A file that cannot be
// read or parsed is logged and removed: it can only describe a connection whose cleanup is lost
// anyway, and must not stop the forwarder. Open fails when dir cannot be created or written.
func Open(ctx context.Context, dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errors.Wrap(err, "creating the journal directory")
	}
	if err := probeWritable(dir); err != nil {
		return nil, err
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, errors.Wrap(err, "reading the journal directory")
	}
	j := &Journal{dir: dir, entries: map[string]*entry{}}
	for _, name := range names {
		path := filepath.Join(dir, name.Name())
		switch {
		case strings.HasPrefix(name.Name(), tempPrefix):
			_ = os.Remove(path) // a write a crash interrupted; the previous record is still in place
		case name.Type().IsRegular() && strings.HasSuffix(name.Name(), fileSuffix):
			conn, err := load(path)
			if err != nil {
				log.FromContext(ctx).Warnf("journal: removing unreadable record %s: %v", path, err)
				_ = os.Remove(path)
				continue
			}
			j.entries[conn.GetId()] = &entry{conn: conn}
		}
	}
	return j, nil
}

func probeWritable(dir string) error {
	probe, err := os.CreateTemp(dir, tempPrefix)
	if err != nil {
		return errors.Wrap(err, "journal directory is not writable")
	}
	_ = probe.Close()
	return os.Remove(probe.Name())
}

func load(path string) (*networkservice.Connection, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeRecord(filepath.Base(path), data)
}

// decodeRecord parses the content of the record file called name. It accepts only what Record
// writes: the stripped connection, in the file its ID names.
func decodeRecord(name string, data []byte) (*networkservice.Connection, error) {
	conn := &networkservice.Connection{}
	if err := protojson.Unmarshal(data, conn); err != nil {
		return nil, err
	}
	if name != fileName(conn.GetId()) {
		return nil, errors.Errorf("holds connection %q, which belongs in %s", conn.GetId(), fileName(conn.GetId()))
	}
	if stripped := strip(conn); stripped == nil || !proto.Equal(stripped, conn) {
		return nil, errors.Errorf("holds more or less than a record of connection %q", conn.GetId())
	}
	return conn, nil
}

// Connections returns the recorded connections, sorted by ID: at start-up, those of the previous run.
func (j *Journal) Connections() []*networkservice.Connection {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	held := make([]*entry, 0, len(j.entries))
	for _, e := range j.entries {
		held = append(held, e)
	}
	j.mu.Unlock()
	var conns []*networkservice.Connection
	for _, e := range held {
		e.mu.Lock()
		if e.conn != nil {
			conns = append(conns, e.conn.Clone())
		}
		e.mu.Unlock()
	}
	sort.Slice(conns, func(a, b int) bool { return conns[a].GetId() < conns[b].GetId() })
	return conns
}

// Record saves what a later cleanup of conn needs. A connection without a kernel mechanism is
// forgotten instead, and a record whose content is unchanged is not written again.
func (j *Journal) Record(conn *networkservice.Connection) error {
	if j == nil {
		return nil
	}
	stripped := strip(conn)
	if stripped == nil {
		return j.Forget(conn.GetId())
	}
	e := j.lockedEntry(stripped.GetId())
	defer e.mu.Unlock()
	if proto.Equal(e.conn, stripped) {
		return nil
	}
	if err := j.write(stripped); err != nil {
		return err
	}
	e.conn = stripped
	return nil
}

// Forget removes the record of the connection with this ID, if there is one.
func (j *Journal) Forget(id string) error {
	if j == nil {
		return nil
	}
	e := j.entry(id, false)
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn != nil {
		if err := os.Remove(filepath.Join(j.dir, fileName(id))); err != nil && !os.IsNotExist(err) {
			return errors.Wrapf(err, "journal: removing the record of %s", id)
		}
	}
	e.conn = nil
	e.detached = true
	j.mu.Lock()
	delete(j.entries, id)
	j.mu.Unlock()
	return nil
}

// lockedEntry returns the connection's entry, locked, creating it if need be. An entry a
// concurrent Forget detached while this call waited for it is not used: what were recorded in it
// would be on disk but unknown to the map.
func (j *Journal) lockedEntry(id string) *entry {
	for {
		e := j.entry(id, true)
		e.mu.Lock()
		if !e.detached {
			return e
		}
		e.mu.Unlock()
	}
}

func (j *Journal) entry(id string, create bool) *entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.entries[id]
	if !ok && create {
		e = &entry{}
		j.entries[id] = e
	}
	return e
}

// write replaces the connection's file atomically: a crash leaves the old content or the new one.
func (j *Journal) write(conn *networkservice.Connection) error {
	data, err := protojson.Marshal(conn)
	if err != nil {
		return errors.Wrapf(err, "journal: encoding %s", conn.GetId())
	}
	temp, err := os.CreateTemp(j.dir, tempPrefix)
	if err != nil {
		return errors.Wrap(err, "journal")
	}
	_, err = temp.Write(data)
	if err == nil {
		err = temp.Sync()
	}
	if closeErr := temp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(temp.Name(), filepath.Join(j.dir, fileName(conn.GetId())))
	}
	if err != nil {
		_ = os.Remove(temp.Name())
		return errors.Wrapf(err, "journal: writing the record of %s", conn.GetId())
	}
	return syncDir(j.dir)
}

// syncDir makes a rename durable: until the directory is synced, a crash may forget it.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return errors.Wrap(err, "journal")
	}
	defer func() { _ = d.Close() }()
	return errors.Wrap(d.Sync(), "journal: syncing the directory")
}

// fileName derives a fixed-length, path-safe name from a connection ID of any content.
func fileName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16]) + fileSuffix
}
