package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LockName is the file in a checkpoint directory whose lock says that a
// process writes the directory.
const LockName = ".lock"

// ErrInUse is Lock's error where another process holds the directory.
var ErrInUse = errors.New("in use by another process")

// Lock takes the directory for this process until Unlock, or until the
// process ends (kill -9 included: the lock is the kernel's, on an open
// file): two processes writing one directory would prune and overwrite
// each other's checkpoints, and remove each other's temporary files. It
// makes the directory where there is none (Unlock removes it again where
// nothing else came into it: a run refused before its first checkpoint
// leaves nothing behind).
func (d *Dir) Lock() error {
	if _, err := os.Stat(d.Path); os.IsNotExist(err) {
		d.made = true
	}
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		return fmt.Errorf("checkpoint directory %s: %w", d.Path, err)
	}
	f, err := os.OpenFile(filepath.Join(d.Path, LockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("checkpoint directory %s: %w", d.Path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("checkpoint directory %s: %w (one process a directory: give each run its own)", d.Path, ErrInUse)
		}
		return fmt.Errorf("checkpoint directory %s: lock: %w", d.Path, err)
	}
	d.lock = f
	return nil
}

// Unlock lets go of the directory Lock took (nothing where it took none).
func (d *Dir) Unlock() error {
	if d.lock == nil {
		return nil
	}
	err := d.lock.Close() // closing the file releases the lock
	d.lock = nil
	if d.made {
		d.made = false
		if ents, rerr := os.ReadDir(d.Path); rerr == nil && len(ents) == 1 && ents[0].Name() == LockName {
			_ = os.Remove(filepath.Join(d.Path, LockName))
			_ = os.Remove(d.Path)
		}
	}
	return err
}
