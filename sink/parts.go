package sink

// # Part files
//
// Parts writes an output P as numbered part files beside it, one per
// epoch (a checkpoint's), in two phases as Flink's FileSink does:
//
//   - An epoch's rows go to a hidden in-progress file ".P.part-E.inprogress"
//     (E: the epoch, zero-padded to 20 digits, so that the parts' lexical
//     order is their epochs' order), created at the epoch's first write:
//     an epoch with no rows writes no part.
//   - PreCommit, before the epoch's checkpoint is written, syncs the file,
//     closes it and syncs the directory (the file's name is durable too).
//   - Commit, once the checkpoint is durable, renames it to "P.part-E" and
//     syncs the directory.
//   - Recover(e), on a restart from checkpoint e, commits an in-progress
//     file of an epoch up to e (its checkpoint is durable, so it was
//     pre-committed: rolled forward) and removes the parts and in-progress
//     files of epochs after e (their rows are emitted again).
//
// "cat P.part-*" is then the output. P itself is never written. The rules
// of Create hold for P: the same file as an input is refused; a symlink is
// resolved and the parts are named after its target, beside it; the parts
// take the permission bits (and, where the process may, the owner) of an
// existing P, else of the newest committed part, else 0666 less the umask.
// Anything that is not a regular file (a FIFO, a device, a socket, a
// process's descriptor such as /dev/stdout) is refused: what is written
// through cannot be taken back after a crash.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Parts is an output written as part files, one per epoch. Write, PreCommit
// and Commit are for one goroutine at a time (Write may come between a
// PreCommit and its Commit: it goes to the next epoch); Abort may be called
// from any.
type Parts struct {
	path  string      // as given
	dir   string      // the target's directory
	base  string      // the target's name
	model os.FileInfo // whose mode the parts take; nil: 0666 less the umask
	// syncDir syncs a directory (tests count the calls).
	syncDir func(dir string) error

	mu      sync.Mutex
	epoch   uint64   // the epoch being written
	cur     *os.File // its in-progress file; nil until its first write
	size    int64    // cur's bytes written or placed
	pending uint64   // the epoch pre-committed and not yet committed; 0: none
	aborted bool
}

// Part is a part file (or an in-progress one) found in the directory.
type Part struct {
	Epoch uint64
	Path  string
}

// CreateParts readies path's parts, refusing path where it is the same file
// as any of inputs (as are the existing parts), is not a regular file (nor
// a path that does not exist yet), or lies in a directory that is missing
// or not writable. It writes nothing: call Recover first.
func CreateParts(path string, inputs ...string) (*Parts, error) {
	if path == "" {
		return nil, usagef("output path is empty")
	}
	if _, ok := processFD(path); ok {
		return nil, usagef("%s names a file descriptor of the process: written through, its output cannot be taken back after a crash; name a regular file", path)
	}
	target, fi, err := resolve(path)
	if err != nil {
		return nil, err
	}
	if fi != nil && !fi.Mode().IsRegular() {
		return nil, usagef("%s is not a regular file (%v): written through, its output cannot be taken back after a crash; name a regular file", path, fi.Mode().Type())
	}
	if err := checkInputs(path, inputs); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	p := &Parts{path: path, dir: filepath.Clean(dir), base: base, model: fi, syncDir: syncDir, epoch: 1}
	// A probe, so that a missing or read-only directory is reported before
	// any work, as Create reports it.
	probe, err := createTemp(p.dir, "."+base+".probe-", 0o600)
	if err != nil {
		return nil, classify(fmt.Errorf("create a part of %s: %w", path, err))
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	committed, inProgress, _, err := p.scan()
	if err != nil {
		return nil, err
	}
	for _, q := range append(committed, inProgress...) {
		if err := checkInputs(q.Path, inputs); err != nil {
			return nil, err
		}
	}
	if p.model == nil && len(committed) > 0 {
		if fi, err := os.Lstat(committed[len(committed)-1].Path); err == nil {
			p.model = fi
		}
	}
	return p, nil
}

// Name returns the path CreateParts was given.
func (p *Parts) Name() string { return p.path }

// Pattern is the parts' paths as a shell pattern: "DIR/P.part-*".
func (p *Parts) Pattern() string { return filepath.Join(p.dir, p.base) + ".part-*" }

// PartPath is the path of epoch's part.
func (p *Parts) PartPath(epoch uint64) string {
	return filepath.Join(p.dir, p.base+".part-"+pad(epoch))
}

// inProgressPath is the path of epoch's in-progress file.
func (p *Parts) inProgressPath(epoch uint64) string {
	return filepath.Join(p.dir, "."+p.base+".part-"+pad(epoch)+".inprogress")
}

func pad(epoch uint64) string { return fmt.Sprintf("%020d", epoch) }

// Epoch is the epoch being written: the one the next PreCommit closes.
func (p *Parts) Epoch() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch
}

// Committed lists the committed parts, by epoch.
func (p *Parts) Committed() ([]Part, error) {
	c, _, _, err := p.scan()
	return c, err
}

// scan lists the committed parts and the in-progress files, each by
// epoch, and the probes of CreateParts that a crash left between a
// probe's creation and its removal (files of nothing).
func (p *Parts) scan() (committed, inProgress []Part, probes []string, err error) {
	ents, err := os.ReadDir(p.dir)
	if err != nil {
		return nil, nil, nil, classify(fmt.Errorf("list the parts of %s: %w", p.path, err))
	}
	q := regexp.QuoteMeta(p.base)
	partRe := regexp.MustCompile(`^` + q + `\.part-([0-9]{20})$`)
	progRe := regexp.MustCompile(`^\.` + q + `\.part-([0-9]{20})\.inprogress$`)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "."+p.base+".probe-") && e.Type().IsRegular() {
			probes = append(probes, filepath.Join(p.dir, e.Name()))
			continue
		}
		list := &committed
		m := partRe.FindStringSubmatch(e.Name())
		if m == nil {
			list, m = &inProgress, progRe.FindStringSubmatch(e.Name())
		}
		if m == nil {
			continue
		}
		epoch, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			continue // past the largest epoch: not a name this package writes
		}
		path := filepath.Join(p.dir, e.Name())
		if !e.Type().IsRegular() {
			return nil, nil, nil, usagef("%s is a part of %s but not a regular file (%v): refusing to touch it", path, p.path, e.Type())
		}
		*list = append(*list, Part{Epoch: epoch, Path: path})
	}
	for _, l := range [][]Part{committed, inProgress} {
		sort.Slice(l, func(i, j int) bool { return l[i].Epoch < l[j].Epoch })
	}
	return committed, inProgress, probes, nil
}

// Recover settles the directory on a restart from the checkpoint of epoch
// (0: none, a start afresh): an in-progress file of an epoch up to it is
// committed (its checkpoint is durable, so it was pre-committed), the
// parts and in-progress files of later epochs are removed; note (nil:
// none) is told of each. The next epoch written is next, past epoch: the
// run's checkpoints may be numbered past the one it resumes from (a start
// afresh numbers them above those of the directory).
func (p *Parts) Recover(epoch, next uint64, note func(format string, args ...any)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil || p.pending != 0 {
		return fmt.Errorf("recover %s: parts are being written", p.path)
	}
	if next <= epoch {
		return fmt.Errorf("recover %s: next epoch %d is not past epoch %d", p.path, next, epoch)
	}
	if note == nil {
		note = func(string, ...any) {}
	}
	committed, inProgress, probes, err := p.scan()
	if err != nil {
		return err
	}
	for _, path := range probes {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("recover %s: %w", p.path, err)
		}
		note("%s: removed (a probe of the directory, left by a crash)", path)
	}
	has := map[uint64]bool{}
	for _, c := range committed {
		has[c.Epoch] = true
	}
	changed := false
	for _, f := range inProgress {
		if f.Epoch <= epoch {
			if has[f.Epoch] {
				return fmt.Errorf("recover %s: both %s and %s exist", p.path, f.Path, p.PartPath(f.Epoch))
			}
			if err := renameNoReplace(f.Path, p.PartPath(f.Epoch)); err != nil {
				return fmt.Errorf("recover %s: commit epoch %d: %w", p.path, f.Epoch, err)
			}
			note("%s: committed (epoch %d was pre-committed and its checkpoint is durable; the crash came before its commit)", p.PartPath(f.Epoch), f.Epoch)
		} else {
			if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("recover %s: %w", p.path, err)
			}
			note("%s: removed (epoch %d is not committed: its rows are emitted again after checkpoint %d)", f.Path, f.Epoch, epoch)
		}
		changed = true
	}
	for _, c := range committed {
		if c.Epoch <= epoch {
			continue
		}
		if err := os.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("recover %s: %w", p.path, err)
		}
		note("%s: removed (epoch %d is after checkpoint %d, which the run resumes from: its rows are emitted again)", c.Path, c.Epoch, epoch)
		changed = true
	}
	if changed {
		if err := p.syncDir(p.dir); err != nil {
			return fmt.Errorf("recover %s: %w", p.path, err)
		}
	}
	p.epoch = next
	return nil
}

// Write appends to the epoch's in-progress file, creating it at its first
// write.
func (p *Parts) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.current(); err != nil {
		return 0, err
	}
	n, err := p.cur.WriteAt(b, p.size)
	p.size += int64(n)
	return n, err
}

// place reserves n bytes at the end of the epoch's in-progress file,
// creating it at its first write, for a write at the offset it returns
// (pwrite: any goroutine, any number at once, each to its own bytes),
// done before the epoch's PreCommit and any Abort.
func (p *Parts) place(n int) (*os.File, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.current(); err != nil {
		return nil, 0, err
	}
	off := p.size
	p.size += int64(n)
	return p.cur, off, nil
}

// current readies the epoch's in-progress file, under mu.
func (p *Parts) current() error {
	if p.aborted {
		return fmt.Errorf("write %s: aborted", p.path)
	}
	if p.cur == nil {
		f, err := p.create(p.inProgressPath(p.epoch))
		if err != nil {
			return err
		}
		p.cur, p.size = f, 0
	}
	return nil
}

// create creates an in-progress file with the parts' mode.
func (p *Parts) create(name string) (*os.File, error) {
	perm := os.FileMode(0o666) // the kernel applies the umask, as for os.Create
	if p.model != nil {
		perm = 0o600 // until keepMode: never readable by more than the model
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, classify(fmt.Errorf("create a part of %s: %w", p.path, err))
	}
	if p.model != nil {
		if err := keepMode(f, p.model); err != nil {
			_ = f.Close()
			_ = os.Remove(name)
			return nil, fmt.Errorf("create a part of %s: %w", p.path, err)
		}
	}
	return f, nil
}

// PreCommit ends epoch (the one being written): its in-progress file, if
// it has one, synced and closed, and its name made durable. Call it before
// the epoch's checkpoint is written; the next writes go to epoch+1.
func (p *Parts) PreCommit(epoch uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.aborted {
		return fmt.Errorf("pre-commit %s: aborted", p.path)
	}
	if epoch != p.epoch {
		return fmt.Errorf("pre-commit %s: epoch %d, but epoch %d is being written", p.path, epoch, p.epoch)
	}
	if p.pending != 0 {
		return fmt.Errorf("pre-commit %s: epoch %d is not committed yet", p.path, p.pending)
	}
	if f := p.cur; f != nil {
		p.cur = nil
		// The sync makes the rename (or a recovery's) publish data that is
		// on disk; the directory's, that the file is found after a crash.
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = p.syncDir(p.dir)
		}
		if err != nil {
			_ = os.Remove(f.Name())
			return fmt.Errorf("pre-commit %s epoch %d: %w", p.path, epoch, err)
		}
		p.pending = epoch
	}
	p.epoch = epoch + 1
	return nil
}

// Commit publishes epoch, pre-committed: its in-progress file renamed to
// its part and the directory synced. An epoch that wrote nothing commits
// nothing.
func (p *Parts) Commit(epoch uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if epoch >= p.epoch {
		return fmt.Errorf("commit %s: epoch %d is not pre-committed", p.path, epoch)
	}
	if p.pending == 0 {
		return nil
	}
	if p.pending != epoch {
		return fmt.Errorf("commit %s: epoch %d, but epoch %d is pending", p.path, epoch, p.pending)
	}
	if err := renameNoReplace(p.inProgressPath(epoch), p.PartPath(epoch)); err != nil {
		return fmt.Errorf("commit %s epoch %d: %w", p.path, epoch, err)
	}
	p.pending = 0
	if err := p.syncDir(p.dir); err != nil {
		return fmt.Errorf("commit %s epoch %d: %w", p.path, epoch, err)
	}
	return nil
}

// Abort gives up the epoch being written: its in-progress file closed and
// removed. A pre-committed epoch is left for Recover, which commits it
// where its checkpoint is durable. Idempotent, safe from any goroutine.
func (p *Parts) Abort() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.aborted = true
	f := p.cur
	if f == nil {
		return nil
	}
	p.cur = nil
	_ = f.Close()
	if err := os.Remove(f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("abort %s: %w", p.path, err)
	}
	return nil
}

// syncDir syncs a directory, so that the names created, renamed and removed
// in it survive a crash. A file system that cannot sync a directory
// (EINVAL) loses only that durability, as Commit of a File does.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	err = d.Sync()
	_ = d.Close()
	if err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// renameNoReplace renames old to new where new does not exist: a committed
// part is never replaced (a part of the epoch that is there already is a
// recovery's mistake, and must not hide). A file system without the flag
// (EINVAL) is checked first instead.
func renameNoReplace(old, new string) error {
	err := unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE)
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) {
		if _, lerr := os.Lstat(new); lerr == nil {
			return &os.LinkError{Op: "rename", Old: old, New: new, Err: fs.ErrExist}
		}
		return os.Rename(old, new)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: old, New: new, Err: err}
	}
	return nil
}
