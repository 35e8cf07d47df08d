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
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
)

const (
	fileSuffix    = ".json"
	tempPrefix    = ".tmp-"
	quarantineDir = "unreadable"
)

// Journal is the set of records in one directory, which it holds locked while it is open. It is
// safe for concurrent use. A nil *Journal records nothing.
//
// While the directory takes no writes (read-only, full), the journal keeps its records in memory
// and restart recovery is off; it probes the directory with backoff and, once it is writable, takes
// its lock and writes the whole current set (see disk).
type Journal struct {
	dir        string
	siblingKey string
	logger     log.Logger

	mu      sync.Mutex
	entries map[string]*entry

	disk disk
}

// entry is one connection's record; its lock orders everything done to that record.
type entry struct {
	mu  sync.Mutex
	rec *Record // nil until recorded, and once forgotten
	// detached is set when the entry is taken out of the map.
	detached bool
	// generation changes whenever a Request begins on the record, so that a cleanup retried for an
	// earlier Close stops.
	generation uint64
	// namespaceFiles remembers the identity of each namespace file URL the record was given: a
	// descriptor held by recvfd pins its namespace, so its identity is computed once.
	namespaceFiles map[string]string
	// committedHere is set once this run commits the record. A committed state read from disk is
	// no cache for the next commit: VPP restarted with the forwarder numbers its new interfaces
	// as the dead run's were, so an equal index does not prove the pod's link is the recorded one.
	committedHere bool
}

// Open uses dir (created if missing) as the journal: it locks it against any other forwarder, loads
// what it holds, and with AdoptSiblings takes over the records of sibling directories whose
// forwarder is gone. A record that cannot be read is moved aside into the unreadable subdirectory,
// never deleted, and does not stop the forwarder.
//
// A directory that cannot be created or written (a read-only filesystem, a full one, no
// permission) does not fail Open: the journal starts in memory, says so (Writable, a log line at
// ERROR, the forwarder_vpp_journal_writable gauge) and writes its records once it can. Open fails
// when dir is not a directory, cannot be read, or another running forwarder holds it.
func Open(ctx context.Context, dir string, opts ...Option) (*Journal, error) {
	o := &options{}
	for _, opt := range opts {
		opt(o)
	}
	j := &Journal{dir: dir, siblingKey: o.siblingKey, logger: log.FromContext(ctx), entries: map[string]*entry{}}
	unwritable, err := prepareDir(dir)
	if err != nil {
		return nil, err
	}
	if j.disk.lock, err = lockDir(dir, unwritable != nil); err != nil {
		return nil, err
	}
	loaded := loadDir(ctx, dir)
	for _, rec := range loaded {
		j.entries[rec.ID] = &entry{rec: rec}
	}
	fwdmetrics.JournalRecords(ctx, len(loaded))
	if unwritable == nil && o.siblingKey != "" {
		if unwritable = writeOwner(dir, o.siblingKey); unwritable == nil {
			j.adoptSiblings(ctx, o.siblingKey)
		}
	}
	if unwritable != nil {
		j.goOffline(unwritable, "")
		if o.siblingKey != "" {
			j.logger.Warnf("journal: the journals of replaced forwarders beside %s are left where they are: the run after this one adopts them", dir)
		}
		return j, nil
	}
	fwdmetrics.JournalWritable(ctx, true)
	return j, nil
}

// prepareDir creates dir if need be and checks that it takes a write. unwritable says why it does
// not, when the filesystem refuses (read-only, full, no permission); err is anything else.
func prepareDir(dir string) (unwritable, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		if refusesWrites(err) {
			return errors.Wrap(err, "creating the journal directory"), nil
		}
		return nil, errors.Wrap(err, "creating the journal directory")
	}
	if err := probeWritable(dir); err != nil {
		if refusesWrites(err) {
			return err, nil
		}
		return nil, err
	}
	return nil, nil
}

// refusesWrites tells a filesystem that refuses writes, which may change, from a journal that
// cannot be (a path that is not a directory).
func refusesWrites(err error) bool {
	for _, errno := range []unix.Errno{unix.EROFS, unix.ENOSPC, unix.EDQUOT, unix.EACCES, unix.EPERM} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// Close stops probing an unwritable directory and releases the journal's lock; the records stay
// on disk for the next run.
func (j *Journal) Close() error {
	if j == nil {
		return nil
	}
	j.stopProbing()
	j.disk.mu.Lock()
	defer j.disk.mu.Unlock()
	if j.disk.lock == nil {
		return nil
	}
	err := j.disk.lock.Close()
	j.disk.lock = nil
	return err
}

// Dir is the journal's directory.
func (j *Journal) Dir() string { return j.dir }

// probeWritable writes a byte, not just a name: a full tmpfs still creates empty files.
func probeWritable(dir string) error {
	probe, err := os.CreateTemp(dir, tempPrefix)
	if err != nil {
		return errors.Wrap(err, "journal directory is not writable")
	}
	_, err = probe.Write([]byte{0})
	if closeErr := probe.Close(); err == nil {
		err = closeErr
	}
	_ = os.Remove(probe.Name())
	return errors.Wrap(err, "journal directory takes no writes")
}

// loadDir reads every record of dir, moving unreadable ones aside, and removes the temporary files
// of writes a crash interrupted (the record they were replacing is still in place).
func loadDir(ctx context.Context, dir string) []*Record {
	names, err := os.ReadDir(dir)
	if err != nil {
		log.FromContext(ctx).Warnf("journal: reading %s: %v", dir, err)
		return nil
	}
	var records []*Record
	for _, name := range names {
		path := filepath.Join(dir, name.Name())
		switch {
		case strings.HasPrefix(name.Name(), tempPrefix):
			_ = os.Remove(path)
		case name.Type().IsRegular() && strings.HasSuffix(name.Name(), fileSuffix):
			rec, err := load(path)
			if err != nil {
				quarantine(ctx, dir, path, err)
				continue
			}
			records = append(records, rec)
		}
	}
	return records
}

func load(path string) (*Record, error) {
	data, err := os.ReadFile(path) //nolint:gosec // a file of the journal's own directory
	if err != nil {
		return nil, err
	}
	return decodeRecord(filepath.Base(path), data)
}

// decodeRecord parses the content of the record file called name. It accepts only what the
// journal writes: a record in the file its ID names, holding stripped connections only.
func decodeRecord(name string, data []byte) (*Record, error) {
	rec, err := decode(data)
	if err != nil {
		return nil, err
	}
	if name != fileName(rec.ID) {
		return nil, errors.Errorf("holds connection %q, which belongs in %s", rec.ID, fileName(rec.ID))
	}
	for _, s := range rec.InterfaceStates() {
		for _, conn := range []*networkservice.Connection{s.Incoming, s.Outgoing} {
			if conn != nil && !proto.Equal(strip(conn), conn) {
				return nil, errors.Errorf("holds more than a record of connection %q", rec.ID)
			}
		}
	}
	return rec, nil
}

// quarantine moves an unreadable record into dir's unreadable subdirectory, where an operator can
// read it: it may be the only trace of a connection whose cleanup is now left to them.
func quarantine(ctx context.Context, dir, path string, cause error) {
	target := filepath.Join(dir, quarantineDir, filepath.Base(path))
	err := os.MkdirAll(filepath.Dir(target), 0o700)
	if err == nil {
		err = os.Rename(path, target)
	}
	if err != nil {
		log.FromContext(ctx).Errorf("journal: record %s is unreadable (%v) and could not be moved aside: %v", path, cause, err)
		return
	}
	log.FromContext(ctx).Warnf("journal: record %s is unreadable (%v): moved to %s", path, cause, target)
}

// Records returns copies of the records, sorted by ID: at start-up, those the previous runs left.
func (j *Journal) Records() []*Record {
	if j == nil {
		return nil
	}
	var records []*Record
	for _, e := range j.heldEntries() {
		e.mu.Lock()
		if e.rec != nil {
			records = append(records, e.rec.Clone())
		}
		e.mu.Unlock()
	}
	sort.Slice(records, func(a, b int) bool { return records[a].ID < records[b].ID })
	return records
}

// Lookup returns a copy of the record of id, or nil.
func (j *Journal) Lookup(id string) *Record {
	return readEntry(j, id, func(e *entry) *Record { return e.rec.Clone() })
}

// committed is connection id's committed state as this run committed it, nil when it has none
// (see entry.committedHere). A stored record is never changed in place (every change stores a
// changed copy), so it is returned without a copy, for reading only: the Request path asks on
// every refresh.
func (j *Journal) committed(id string) *State {
	return readEntry(j, id, func(e *entry) *State {
		if e.rec == nil || !e.committedHere {
			return nil
		}
		return e.rec.Committed
	})
}

// superseded is a record of connection id's superseded states alone, for their release; nil when
// it has none, the case of nearly every Request.
func (j *Journal) superseded(id string) *Record {
	return readEntry(j, id, func(e *entry) *Record {
		if e.rec == nil || len(e.rec.Superseded) == 0 {
			return nil
		}
		return (&Record{ID: e.rec.ID, Superseded: e.rec.Superseded, Namespaces: e.rec.Namespaces}).Clone()
	})
}

// readEntry is what read finds in connection id's entry, read under its lock; the zero value when
// the journal holds no entry for id.
func readEntry[T any](j *Journal, id string, read func(*entry) T) T {
	var none T
	if j == nil {
		return none
	}
	e := j.entry(id, false)
	if e == nil {
		return none
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return read(e)
}

func (j *Journal) heldEntries() []*entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	held := make([]*entry, 0, len(j.entries))
	for _, e := range j.entries {
		held = append(held, e)
	}
	return held
}

// Forget removes the record of id, if there is one.
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
	return j.forgetLocked(id, e)
}

// forgetLocked forgets the record; a removal the directory refuses is done once it is writable.
func (j *Journal) forgetLocked(id string, e *entry) error {
	if e.rec != nil {
		if !j.deferToMemory(id) {
			err := removeRecord(j.dir, id)
			fwdmetrics.JournalWrite(context.Background(), err)
			if err != nil {
				j.goOffline(err, id)
			}
		}
		fwdmetrics.JournalRecords(context.Background(), -1)
	}
	e.rec = nil
	e.detached = true
	j.mu.Lock()
	if j.entries[id] == e {
		delete(j.entries, id)
	}
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

// unlockEntry unlocks an entry lockedEntry returned, and takes it out of the map if it holds no
// record: a call that failed before anything was recorded leaves the journal as it found it, and
// a client cannot grow the map by failing Requests under ever new connection IDs.
func (j *Journal) unlockEntry(id string, e *entry) {
	if e.rec == nil && !e.detached {
		e.detached = true
		j.mu.Lock()
		if j.entries[id] == e {
			delete(j.entries, id)
		}
		j.mu.Unlock()
	}
	e.mu.Unlock()
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

// store writes rec as the entry's record, unless the entry already holds the same content. While
// the directory takes no writes, the record is held in memory only and written once it does: a
// Request is never refused for a full or read-only disk, only its restart recovery is lost.
func (j *Journal) store(e *entry, rec *Record) error {
	if e.rec != nil && e.rec.Committed.equal(rec.Committed) && e.rec.Intent.equal(rec.Intent) && sameStates(e.rec.Superseded, rec.Superseded) &&
		sameNamespaces(e.rec, rec) {
		return nil
	}
	data, err := encode(rec)
	if err != nil {
		return errors.Wrapf(err, "journal: encoding %s", rec.ID)
	}
	if !j.deferToMemory(rec.ID) {
		err = writeData(j.dir, rec.ID, data)
		fwdmetrics.JournalWrite(context.Background(), err)
		if err != nil {
			j.goOffline(err, rec.ID)
		}
	}
	if e.rec == nil {
		fwdmetrics.JournalRecords(context.Background(), 1)
	}
	e.rec = rec
	return nil
}

func sameStates(a, b []*State) bool {
	if len(a) != len(b) {
		return false
	}
	for n := range a {
		if !a[n].equal(b[n]) {
			return false
		}
	}
	return true
}

func sameNamespaces(a, b *Record) bool {
	if len(a.Namespaces) != len(b.Namespaces) {
		return false
	}
	for k, v := range a.Namespaces {
		if b.Namespaces[k] != v {
			return false
		}
	}
	return true
}

// writeRecord replaces the record's file atomically: a crash of the forwarder leaves the old
// content or the new one. It does not sync: the page cache outlives every process, and what
// empties it (the node going down) also takes everything a record names: VPP, the pods' namespaces
// and their links and rules. A record cut short that way is unreadable and moved aside at the next
// start (quarantine); a whole one names namespaces that netnsid no longer finds. The syncs were
// two disk flushes per write, three writes per first Request, and protected nothing.
func writeRecord(dir string, rec *Record) error {
	data, err := encode(rec)
	if err != nil {
		return errors.Wrapf(err, "journal: encoding %s", rec.ID)
	}
	return writeData(dir, rec.ID, data)
}

func writeData(dir, id string, data []byte) error {
	temp, err := os.CreateTemp(dir, tempPrefix)
	if err != nil {
		return errors.Wrap(err, "journal")
	}
	_, err = temp.Write(data)
	if closeErr := temp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(temp.Name(), filepath.Join(dir, fileName(id)))
	}
	if err != nil {
		_ = os.Remove(temp.Name())
		return errors.Wrapf(err, "journal: writing the record of %s", id)
	}
	return nil
}

func removeRecord(dir, id string) error {
	err := os.Remove(filepath.Join(dir, fileName(id)))
	if err != nil && !os.IsNotExist(err) {
		return errors.Wrapf(err, "journal: removing the record of %s", id)
	}
	return nil
}

func fileName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16]) + fileSuffix
}

// Read returns the readable records of the journal in dir without locking or changing anything:
// what a running forwarder has on disk, for tests and operators.
func Read(dir string) ([]*Record, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var records []*Record
	for _, name := range names {
		if !name.Type().IsRegular() || !strings.HasSuffix(name.Name(), fileSuffix) || strings.HasPrefix(name.Name(), tempPrefix) {
			continue
		}
		if rec, err := load(filepath.Join(dir, name.Name())); err == nil {
			records = append(records, rec)
		}
	}
	sort.Slice(records, func(a, b int) bool { return records[a].ID < records[b].ID })
	return records, nil
}
