package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
)

const (
	lockFile  = "lock"
	ownerFile = "owner"
)

// lockDir takes dir's lock, which the kernel releases when the process dies however it dies: a
// directory whose lock is free belongs to no running forwarder. In a directory that takes no
// writes, an existing lock file is locked read-only (flock needs no write access), and a missing
// one is no lock at all (nil): it is taken before anything is written there.
func lockDir(dir string, unwritable bool) (*os.File, error) {
	f, held, err := tryLock(dir)
	if err != nil && unwritable {
		if f, held, err = tryLockReadOnly(dir); err != nil {
			return nil, nil //nolint:nilerr // no lock file, and none can be made: taken once writable
		}
	}
	if err != nil {
		return nil, err
	}
	if held {
		return nil, errors.Errorf("journal %s is in use by another running forwarder", dir)
	}
	return f, nil
}

func tryLock(dir string) (f *os.File, held bool, err error) {
	f, err = os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600) //nolint:gosec // the journal's own lock
	if err != nil {
		return nil, false, errors.Wrap(err, "journal: opening the lock")
	}
	return flock(f)
}

func tryLockReadOnly(dir string) (f *os.File, held bool, err error) {
	f, err = os.Open(filepath.Join(dir, lockFile)) //nolint:gosec // the journal's own lock
	if err != nil {
		return nil, false, errors.Wrap(err, "journal: opening the lock")
	}
	return flock(f)
}

func flock(f *os.File) (locked *os.File, held bool, err error) {
	if err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, errors.Wrap(err, "journal: locking")
	}
	return f, false, nil
}

type owner struct {
	Key string `json:"key"`
}

func writeOwner(dir, key string) error {
	data, err := json.Marshal(owner{Key: key})
	if err != nil {
		return err
	}
	temp := filepath.Join(dir, tempPrefix+ownerFile)
	if err = os.WriteFile(temp, data, 0o600); err == nil {
		err = os.Rename(temp, filepath.Join(dir, ownerFile))
	}
	return errors.Wrap(err, "journal: writing the owner")
}

func readOwner(dir string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(dir, ownerFile)) //nolint:gosec // a sibling journal's owner file
	if err != nil {
		return "", false
	}
	var o owner
	if json.Unmarshal(data, &o) != nil {
		return "", false
	}
	return o.Key, true
}

// adoptSiblings takes over the records of every sibling directory written under key whose lock is
// free: its forwarder is gone (a replaced pod). Each record is written here before it is removed
// there, so a crash in between leaves it in both places, never in none; unreadable records move
// along into this journal's unreadable directory.
func (j *Journal) adoptSiblings(ctx context.Context, key string) {
	parent := filepath.Dir(j.dir)
	names, err := os.ReadDir(parent)
	if err != nil {
		log.FromContext(ctx).Warnf("journal: reading %s for the journals of replaced forwarders: %v", parent, err)
		return
	}
	for _, name := range names {
		sibling := filepath.Join(parent, name.Name())
		if !name.IsDir() || sibling == j.dir {
			continue
		}
		if siblingKey, ok := readOwner(sibling); !ok || siblingKey != key {
			continue
		}
		lock, held, err := tryLock(sibling)
		if err != nil || held {
			continue // its forwarder runs: the records are its own
		}
		j.adoptSibling(ctx, sibling)
		_ = lock.Close()
	}
}

func (j *Journal) adoptSibling(ctx context.Context, sibling string) {
	adopted := 0
	complete := true
	for _, rec := range loadDir(ctx, sibling) {
		e := j.lockedEntry(rec.ID)
		err := error(nil)
		if e.rec == nil {
			err = writeRecord(j.dir, rec)
			fwdmetrics.JournalWrite(ctx, err)
			if err == nil {
				e.rec = rec
				adopted++
				fwdmetrics.JournalRecords(ctx, 1)
			}
		}
		j.unlockEntry(rec.ID, e)
		if err != nil {
			log.FromContext(ctx).Errorf("journal: adopting %s from %s: %v", rec.ID, sibling, err)
			complete = false
			continue
		}
		_ = os.Remove(filepath.Join(sibling, fileName(rec.ID)))
	}
	moveUnreadable(ctx, sibling, j.dir)
	if complete {
		for _, name := range []string{ownerFile, lockFile} {
			_ = os.Remove(filepath.Join(sibling, name))
		}
		_ = os.Remove(filepath.Join(sibling, quarantineDir))
		_ = os.Remove(sibling)
	}
	log.FromContext(ctx).Infof("journal: adopted %d records of %s, whose forwarder is gone", adopted, sibling)
}

// moveUnreadable moves the unreadable records of a sibling into this journal's, named after it.
func moveUnreadable(ctx context.Context, sibling, dir string) {
	names, err := os.ReadDir(filepath.Join(sibling, quarantineDir))
	if err != nil {
		return
	}
	if err = os.MkdirAll(filepath.Join(dir, quarantineDir), 0o700); err != nil {
		log.FromContext(ctx).Warnf("journal: %v", err)
		return
	}
	for _, name := range names {
		from := filepath.Join(sibling, quarantineDir, name.Name())
		to := filepath.Join(dir, quarantineDir, filepath.Base(sibling)+"-"+name.Name())
		if err = os.Rename(from, to); err != nil {
			log.FromContext(ctx).Warnf("journal: moving %s: %v", from, err)
		}
	}
}

// Locked tells, without taking it, whether a running forwarder holds the lock of the journal in
// dir: the kernel lists every flock in /proc/locks by the inode of its file.
func Locked(dir string) (bool, error) {
	var stat unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, lockFile), &stat); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, errors.Wrap(err, "journal: the lock")
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false, errors.Wrap(err, "journal: reading /proc/locks")
	}
	// A line reads "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF": the device is major:minor in hex.
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(stat.Dev), unix.Minor(stat.Dev), stat.Ino)
	for _, line := range strings.Split(string(locks), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 6 && fields[1] == "FLOCK" && fields[5] == want {
			return true, nil
		}
	}
	return false, nil
}
