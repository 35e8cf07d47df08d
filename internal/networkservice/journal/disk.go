package journal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/pkg/errors"
	"golang.org/x/sys/unix"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
)

// Probe bounds: an unwritable directory is probed again after reprobeFirst, then after twice as
// long each time, up to reprobeMax between probes. A probe is a mkdir, a one-byte write and a
// remove: cheap enough to keep the gap short, so that recovery comes back soon after the disk does.
// Variables for the tests.
var (
	reprobeFirst = time.Second
	reprobeMax   = 10 * time.Second
)

// disk is what the journal knows of its directory. While it is offline, records change in memory
// only and each changed ID is marked dirty; a probe that finds the directory writable again takes
// the lock, writes every record the journal holds and removes the files of the dirty IDs it no
// longer holds, and only then goes online, under mu, when no ID was marked meanwhile. A record's
// entry lock is taken before mu, never the other way round.
type disk struct {
	mu      sync.Mutex
	lock    *os.File // nil until the directory could be locked
	offline bool
	cause   error
	dirty   map[string]bool
	stop    chan struct{} // closed by Close; the probing goroutine ends
	probing chan struct{} // closed when the probing goroutine has ended
}

// Writable tells whether the journal is written to its directory: false while it takes no writes
// and the journal holds its records in memory only (restart recovery is off).
func (j *Journal) Writable() bool {
	if j == nil {
		return true
	}
	j.disk.mu.Lock()
	defer j.disk.mu.Unlock()
	return !j.disk.offline
}

// deferToMemory marks id dirty and returns true while the journal is offline: the caller changes
// memory only.
func (j *Journal) deferToMemory(id string) bool {
	j.disk.mu.Lock()
	defer j.disk.mu.Unlock()
	if j.disk.offline {
		j.disk.dirty[id] = true
	}
	return j.disk.offline
}

// goOffline holds the record of id (if any) in memory until the directory takes writes again,
// and starts probing it when this is the first write it refused.
func (j *Journal) goOffline(cause error, id string) {
	j.disk.mu.Lock()
	defer j.disk.mu.Unlock()
	if j.disk.dirty == nil {
		j.disk.dirty = map[string]bool{}
	}
	if id != "" {
		j.disk.dirty[id] = true
	}
	if j.disk.offline {
		return
	}
	j.disk.offline, j.disk.cause = true, cause
	fwdmetrics.JournalWritable(context.Background(), false)
	j.logger.Errorf("journal: %s takes no writes (%v): restart recovery is OFF. Connections are served and held in memory; "+
		"the directory is probed again with backoff, and every record is written once it takes writes", j.dir, cause)
	if j.disk.stop == nil {
		j.disk.stop = make(chan struct{})
	}
	j.disk.probing = make(chan struct{})
	go j.probe(j.disk.stop, j.disk.probing)
}

func (j *Journal) stopProbing() {
	j.disk.mu.Lock()
	if j.disk.stop == nil {
		j.disk.stop = make(chan struct{})
	}
	select {
	case <-j.disk.stop:
	default:
		close(j.disk.stop)
	}
	probing := j.disk.probing
	j.disk.mu.Unlock()
	if probing != nil {
		<-probing
	}
}

// probe tries the directory with backoff until the journal is written there again or closed.
func (j *Journal) probe(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	delay := reprobeFirst
	for {
		select {
		case <-stop:
			return
		case <-time.After(delay):
		}
		written, err := j.writeBack()
		if err == nil {
			fwdmetrics.JournalWritable(context.Background(), true)
			j.logger.Infof("journal: %s takes writes again: %d records written, restart recovery is on", j.dir, written)
			return
		}
		delay = min(2*delay, reprobeMax)
		j.logger.Errorf("journal: %s still takes no writes (%v): restart recovery stays OFF; next probe in %s", j.dir, err, delay)
	}
}

// writeBack makes the directory hold what the journal holds, and goes online when it does.
func (j *Journal) writeBack() (written int, err error) {
	unwritable, err := prepareDir(j.dir)
	if err == nil {
		err = unwritable
	}
	if err == nil {
		err = j.takeLock()
	}
	if err == nil && j.siblingKey != "" {
		err = writeOwner(j.dir, j.siblingKey)
	}
	if err != nil {
		return 0, err
	}
	ids := j.heldIDs()
	for {
		j.disk.mu.Lock()
		for id := range j.disk.dirty {
			ids = append(ids, id)
		}
		if len(ids) == 0 {
			j.disk.offline, j.disk.cause = false, nil
			j.disk.mu.Unlock()
			return written, nil
		}
		clear(j.disk.dirty)
		j.disk.mu.Unlock()
		sort.Strings(ids)
		for i, id := range ids {
			if i > 0 && ids[i-1] == id {
				continue
			}
			wrote, err := j.writeBackOne(id)
			if err != nil {
				j.disk.mu.Lock()
				for _, again := range ids[i:] {
					j.disk.dirty[again] = true
				}
				j.disk.mu.Unlock()
				return written, err
			}
			if wrote {
				written++
			}
		}
		ids = nil
	}
}

func (j *Journal) heldIDs() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	ids := make([]string, 0, len(j.entries))
	for id := range j.entries {
		ids = append(ids, id)
	}
	return ids
}

// writeBackOne writes the record of id as the journal holds it (wrote), or removes its file when
// the journal holds none.
func (j *Journal) writeBackOne(id string) (wrote bool, err error) {
	for {
		e := j.entry(id, false)
		if e == nil {
			err = removeRecord(j.dir, id)
			fwdmetrics.JournalWrite(context.Background(), err)
			return false, err
		}
		e.mu.Lock()
		if e.detached {
			e.mu.Unlock()
			continue
		}
		wrote = e.rec != nil
		if wrote {
			err = writeRecord(j.dir, e.rec)
		} else {
			err = removeRecord(j.dir, id)
		}
		e.mu.Unlock()
		fwdmetrics.JournalWrite(context.Background(), err)
		return wrote && err == nil, err
	}
}

// takeLock locks the directory before the journal writes there, if Open could not.
func (j *Journal) takeLock() error {
	j.disk.mu.Lock()
	defer j.disk.mu.Unlock()
	if j.disk.lock != nil {
		return nil
	}
	lock, held, err := tryLock(j.dir)
	if err != nil {
		return err
	}
	if held {
		return errors.Errorf("journal %s is in use by another running forwarder", j.dir)
	}
	j.disk.lock = lock
	return nil
}

// Unwritable says, without writing anything, why dir (or, while it does not exist, the directory
// it would be created in) takes no writes: a read-only filesystem, no permission, no free space or
// inodes; "" when nothing says so. For inspect: a running forwarder's journal is then held in
// memory only, and restart recovery is off.
func Unwritable(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Sprintf("%s: %v", dir, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return fmt.Sprintf("%s: %v", dir, err)
	}
	free := fs.Bavail
	if os.Geteuid() == 0 {
		free = fs.Bfree // root writes into the reserved blocks too
	}
	switch {
	case fs.Flags&unix.ST_RDONLY != 0:
		return dir + ": read-only file system"
	case fs.Blocks > 0 && free == 0:
		return dir + ": no space left on device"
	case fs.Files > 0 && fs.Ffree == 0:
		return dir + ": no free inodes"
	}
	return ""
}
