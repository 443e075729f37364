// Package sink holds the destinations a run writes its output to: File, an
// output file that never destroys anything, and Parts, an output written
// as a part file per checkpoint epoch, committed in two phases (parts.go);
// the Kafka and Redis sinks are in sink/kafka and sink/redis.
//
// # File outputs
//
// Create opens an output path for writing under these rules:
//
//   - An empty path is refused (ErrUsage).
//   - The output must not be the same file as any of the inputs named by the
//     caller, compared by device and inode (a hard link, a symlink or
//     another spelling of an input's path is the same file): refused
//     (ErrSameFile, an ErrUsage), the input untouched. Two character devices
//     are never "the same file" here: writing /dev/null or a terminal
//     destroys no input.
//   - A regular file, or a path that does not exist yet, is written to a
//     temporary file ".NAME.tmp-*" in the destination's directory, created
//     by Create (so that a missing or read-only directory is reported before
//     any work), and renamed over the destination by Commit: readers see the
//     old file or the complete new one, never a part. Abort (or a failed
//     Commit) removes the temporary file and leaves the destination
//     untouched.
//   - An existing file's permission bits (and, where the process may, its
//     owner) are kept on the replacement; a new file gets 0666 less the
//     process's umask, as os.Create would (the kernel applies the umask and
//     the directory's default ACL).
//   - A symlink is never replaced by a regular file: it is resolved, link by
//     link, and the rules apply to its target; for a symlink to a regular
//     file the temporary file lives in the target's directory and is
//     renamed over the target, the link stays. A dangling symlink creates
//     its target (as os.Create through the link would), the link stays.
//   - Anything that is not a regular file (a FIFO, a character or block
//     device such as /dev/null, a Unix socket) is written through: opened
//     for writing, not replaced, not truncated; a socket is connected to.
//     So is a path naming one of the process's file descriptors
//     (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), whatever it
//     is open on, even a regular file: the descriptor is duplicated and
//     written at its own offset, so that "{ echo x; cmd --output
//     /dev/stdout; } > f" appends to f rather than replacing it. Written
//     through output cannot be taken back: Abort only closes it.
//   - A directory is refused (ErrUsage).
//
// Errors of Create that come from the path the user named (empty, the same
// file as an input, a directory, a missing or unwritable directory, a
// symlink loop) match ErrUsage with errors.Is; anything else (an I/O error,
// a full disk) does not.
package sink

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrUsage marks the errors that come from the path the caller was given
// (a usage error for a command line: exit status 2), as opposed to a
// failure of the system.
var ErrUsage = errors.New("bad output path")

// ErrSameFile marks an output that is the same file as an input; it also
// matches ErrUsage.
var ErrSameFile = errors.New("output is the same file as an input")

// usageError wraps err so that it matches ErrUsage without changing its text.
type usageError struct{ err error }

func (e usageError) Error() string   { return e.err.Error() }
func (e usageError) Unwrap() []error { return []error{e.err, ErrUsage} }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// Usagef formats an error that matches ErrUsage (and whatever %w wraps),
// with exactly the text formatted: for callers that refuse a path for
// reasons of their own.
func Usagef(format string, args ...any) error { return usagef(format, args...) }

// kind is how a File reaches its destination.
type kind int

const (
	kindReplace kind = iota // temp file renamed over the destination
	kindThrough             // written through, nothing to commit
)

// File is an output opened by Create. Write it, then Commit; Abort on any
// failure (it is idempotent, and a no-op after Commit, so defer it). Write
// and Commit are for one goroutine; Abort may be called from any.
type File struct {
	path   string // as given
	target string // the file renamed over (kindReplace): path with its symlinks resolved
	kind   kind
	w      io.WriteCloser
	tmp    *os.File // kindReplace: the temporary file (w); nil while suspended
	name   string   // kindReplace: the temporary file's name
	size   int64    // kindReplace: the bytes written or placed

	mu   sync.Mutex
	done bool // committed or aborted
}

// Create opens path for writing under the package's rules, refusing it if
// it is the same file as any of inputs (inputs that do not exist are not
// compared: their reader reports them).
func Create(path string, inputs ...string) (*File, error) {
	if path == "" {
		return nil, usagef("output path is empty")
	}
	if fd, ok := processFD(path); ok {
		if err := checkInputs(path, inputs); err != nil {
			return nil, err
		}
		return createFD(path, fd)
	}
	target, fi, err := resolve(path)
	if err != nil {
		return nil, err
	}
	if err := checkInputs(path, inputs); err != nil {
		return nil, err
	}
	if fi == nil || fi.Mode().IsRegular() {
		return createReplace(path, target, fi)
	}
	return createThrough(path, fi)
}

// Name returns the path Create was given.
func (f *File) Name() string { return f.path }

// WritesThrough says whether the output is written through (not a regular
// file): what is written reaches the destination at once, and Abort cannot
// take it back.
func (f *File) WritesThrough() bool { return f.kind == kindThrough }

// Write writes to the output (the temporary file, or the destination when
// written through), reopening a suspended temporary file first.
func (f *File) Write(p []byte) (int, error) {
	tmp, off, err := f.place(len(p))
	switch {
	case err != nil:
		return 0, err
	case tmp == nil:
		return f.w.Write(p)
	}
	n, err := tmp.WriteAt(p, off)
	f.size = off + int64(n) // what was written, not what was placed
	return n, err
}

// place reserves n bytes at the end of a regular file's temporary file,
// reopened where suspended, for a write at the offset it returns
// (pwrite: any goroutine, any number at once, each to its own bytes),
// done before the file is suspended, committed or aborted. A file written
// through returns nil: it takes its bytes in order, by Write. For the
// goroutine that writes.
func (f *File) place(n int) (*os.File, int64, error) {
	if f.kind == kindThrough {
		return nil, 0, nil
	}
	if f.tmp == nil {
		if err := f.resume(); err != nil {
			return nil, 0, err
		}
	}
	off := f.size
	f.size += int64(n)
	return f.tmp, off, nil
}

// pwritev writes bufs (none empty) in order at off in f, a batch of them
// per system call (pwritev(2)), and returns the bytes written. For a
// file that no goroutine closes meanwhile.
func pwritev(f *os.File, bufs [][]byte, off int64) (int64, error) {
	fd := f.Fd()
	if fd == ^uintptr(0) {
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: os.ErrClosed}
	}
	var total int64
	var iov [64]unix.Iovec
	for len(bufs) > 0 {
		k := min(len(bufs), len(iov))
		for i, b := range bufs[:k] {
			iov[i].Base = &b[0]
			iov[i].SetLen(len(b))
		}
		// the offset's low and high words, as 32-bit Linux takes them;
		// 64-bit Linux reads the low word whole (and shifts the high one
		// out)
		r, _, errno := unix.Syscall6(unix.SYS_PWRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(k), uintptr(off), uintptr(uint64(off)>>(bits.UintSize-1)>>1), 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return total, &os.PathError{Op: "write", Path: f.Name(), Err: errno}
		case r == 0:
			return total, &os.PathError{Op: "write", Path: f.Name(), Err: io.ErrShortWrite}
		}
		n := int64(r)
		total, off = total+n, off+n
		for n > 0 {
			if m := int64(len(bufs[0])); m <= n {
				bufs, n = bufs[1:], n-m
			} else {
				bufs[0], n = bufs[0][n:], 0
			}
		}
	}
	return total, nil
}

// Suspend closes a regular file's temporary file until the next Write (or
// Commit) reopens it, so that an output of many files written in turn
// (a partitioned one's) keeps few descriptors open. A written-through
// output stays open. For the goroutine that writes.
func (f *File) Suspend() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kind != kindReplace || f.tmp == nil || f.done {
		return nil
	}
	err := f.tmp.Close()
	f.tmp, f.w = nil, nil
	if err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	return nil
}

// resume reopens a suspended temporary file for appending.
func (f *File) resume() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return fmt.Errorf("write %s: already committed or aborted", f.path)
	}
	tmp, err := os.OpenFile(f.name, os.O_WRONLY, 0) // written at its size (WriteAt)
	if err != nil {
		return classify(fmt.Errorf("write %s: reopen its temporary file: %w", f.path, err))
	}
	f.tmp, f.w = tmp, tmp
	return nil
}

// Commit makes the output the destination's content: for a regular file it
// syncs, closes and renames the temporary file over the destination; for a
// written-through one it closes it. On failure the temporary file is
// removed and the destination untouched. Commit after Commit or Abort is an
// error.
func (f *File) Commit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return fmt.Errorf("commit %s: already committed or aborted", f.path)
	}
	f.done = true
	if f.kind == kindThrough {
		if err := f.w.Close(); err != nil {
			return fmt.Errorf("commit %s: %w", f.path, err)
		}
		return nil
	}
	tmp, err := f.tmp, error(nil)
	if tmp == nil { // suspended: reopened to be synced
		tmp, err = os.OpenFile(f.name, os.O_WRONLY, 0)
	}
	// The sync makes the rename publish data that is on disk: without it a
	// crash can leave the destination renamed but empty on some file systems.
	if err == nil {
		err = tmp.Sync()
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
	}
	f.tmp, f.w = nil, nil
	if err == nil {
		err = os.Rename(f.name, f.target)
	}
	if err != nil {
		_ = os.Remove(f.name)
		return fmt.Errorf("commit %s: %w", f.path, err)
	}
	// Best effort: the rename is done and visible; a directory that cannot
	// be synced (some file systems) loses only crash durability.
	_ = syncDir(filepath.Dir(f.target))
	return nil
}

// Abort gives the output up: for a regular file it closes and removes the
// temporary file, leaving the destination untouched; for a written-through
// one it closes it (what was written stays written). Idempotent, a no-op
// after Commit, safe from any goroutine; it returns the error of removing
// the temporary file, if any.
func (f *File) Abort() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return nil
	}
	f.done = true
	if f.kind == kindThrough {
		_ = f.w.Close()
		return nil
	}
	if f.tmp != nil { // nil while suspended
		_ = f.tmp.Close()
	}
	if err := os.Remove(f.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("abort %s: %w", f.path, err)
	}
	return nil
}

// WriteFile writes path through Create (refusing the same file as any of
// inputs) and Commit: a regular destination ends up either untouched or
// with the complete output of write. If write fails, the output is aborted
// and the error names path.
func WriteFile(path string, write func(w io.Writer) error, inputs ...string) error {
	f, err := Create(path, inputs...)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// SameFile reports whether paths a and b name the same file: by device and
// inode where both exist (symlinks followed), else by the paths they
// resolve to (a file about to be created at both). Two character devices
// are never the same file (see the package comment).
func SameFile(a, b string) (bool, error) {
	fa, erra := os.Stat(a)
	fb, errb := os.Stat(b)
	if erra == nil && errb == nil {
		return sameInode(fa, fb), nil
	}
	if erra != nil && !errors.Is(erra, fs.ErrNotExist) {
		return false, erra
	}
	if errb != nil && !errors.Is(errb, fs.ErrNotExist) {
		return false, errb
	}
	if (erra == nil) != (errb == nil) {
		return false, nil // one exists, the other does not
	}
	ta, _, err := resolve(a)
	if err != nil {
		return false, err
	}
	tb, _, err := resolve(b)
	if err != nil {
		return false, err
	}
	return canonical(ta) == canonical(tb), nil
}

// SameOutput reports whether outputs a and b write to one destination:
// one of the process's descriptors named twice (/dev/stdout and
// /proc/self/fd/1), or SameFile (a descriptor open on a file or a pipe is
// that file or pipe). Two outputs to one destination splice their lines,
// or the one committed last replaces the other's.
func SameOutput(a, b string) (bool, error) {
	fa, oka := processFD(a)
	fb, okb := processFD(b)
	if oka && okb && fa == fb {
		return true, nil
	}
	return SameFile(a, b)
}

// IsStdout reports whether path names the process's standard output: "-",
// /dev/stdout or /proc/self/fd/1, or the file standard output was
// redirected to. A command that writes its summary to standard output
// writes it elsewhere then, as for "-".
func IsStdout(path string) bool {
	if path == "-" {
		return true
	}
	same, err := SameOutput(path, "/dev/stdout")
	return err == nil && same
}

// IsStdin reports whether path names the process's standard input, its
// descriptor: "-", /dev/stdin or /proc/self/fd/0 (not the file it was
// redirected from, which another open reads from its own start).
func IsStdin(path string) bool {
	fd, ok := processFD(path)
	return path == "-" || ok && fd == 0
}

// canonical is p absolute, with the symlinks of its directory resolved
// (the last element does not exist).
func canonical(p string) string {
	dir, base := filepath.Split(p)
	if dir == "" {
		dir = "."
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	if d, err := filepath.Abs(dir); err == nil {
		dir = d
	}
	return filepath.Join(dir, base)
}

func sameInode(a, b os.FileInfo) bool {
	sa, oka := a.Sys().(*syscall.Stat_t)
	sb, okb := b.Sys().(*syscall.Stat_t)
	if !oka || !okb {
		return os.SameFile(a, b)
	}
	if sa.Dev != sb.Dev || sa.Ino != sb.Ino {
		return false
	}
	return a.Mode()&os.ModeCharDevice == 0 // a tty or /dev/null shared destroys nothing
}

// checkInputs refuses out if it is the same file as one of inputs.
func checkInputs(out string, inputs []string) error {
	for _, in := range inputs {
		if in == "" {
			continue
		}
		same, err := SameFile(out, in)
		if err != nil {
			// An input that cannot be inspected is its reader's to report;
			// an output that cannot is reported when it is opened.
			continue
		}
		if same {
			return usageError{fmt.Errorf("%w: %s is %s, refusing to overwrite it", ErrSameFile, out, in)}
		}
	}
	return nil
}

// maxLinks bounds the symlinks followed, as the kernel does (40).
const maxLinks = 40

// resolve follows path's final symlinks to the file that is to be written:
// target is that path and fi its Lstat (nil when it does not exist). Only
// the last element is resolved link by link (the kernel resolves the
// directories on the way), and without cleaning, so that ".." after a
// symlinked directory means what the kernel means.
func resolve(path string) (target string, fi os.FileInfo, err error) {
	p := path
	for range maxLinks {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil, nil
		}
		if err != nil {
			return "", nil, classify(fmt.Errorf("open output: %w", err))
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			if fi.IsDir() {
				return "", nil, usagef("%s: is a directory", path)
			}
			return p, fi, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", nil, classify(fmt.Errorf("open output: %w", err))
		}
		if !filepath.IsAbs(link) {
			dir := "."
			if i := strings.LastIndexByte(p, '/'); i >= 0 {
				dir = p[:i+1]
				if dir != "/" {
					dir = dir[:len(dir)-1]
				}
			}
			link = dir + "/" + link
		}
		p = link
	}
	return "", nil, usagef("%s: more than %d symlinks", path, maxLinks)
}

// fdPath matches the paths that name a file descriptor of the process.
var (
	fdPath    = regexp.MustCompile(`^/(?:dev/fd|proc/self/fd|proc/thread-self/fd)/([0-9]+)$`)
	pidFDPath = regexp.MustCompile(`^/proc/([0-9]+)/fd/([0-9]+)$`)
)

// processFD says whether path (or a symlink on the way to its target)
// names one of the process's file descriptors, and which.
func processFD(path string) (int, bool) {
	p := path
	for range maxLinks {
		switch filepath.Clean(p) {
		case "/dev/stdin":
			return 0, true
		case "/dev/stdout":
			return 1, true
		case "/dev/stderr":
			return 2, true
		}
		if m := fdPath.FindStringSubmatch(filepath.Clean(p)); m != nil {
			if fd, err := strconv.Atoi(m[1]); err == nil {
				return fd, true
			}
		}
		if m := pidFDPath.FindStringSubmatch(filepath.Clean(p)); m != nil && m[1] == strconv.Itoa(os.Getpid()) {
			if fd, err := strconv.Atoi(m[2]); err == nil {
				return fd, true
			}
		}
		link, err := os.Readlink(p)
		if err != nil {
			return 0, false
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = link
	}
	return 0, false
}

// createFD writes through a duplicate of the process's descriptor fd, so
// that closing the output leaves fd open.
func createFD(path string, fd int) (*File, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, usagef("%s: descriptor %d: %v", path, fd, err)
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return nil, usagef("%s: is a directory", path)
	}
	dup, err := syscall.Dup(fd)
	if err != nil {
		return nil, fmt.Errorf("%s: duplicate descriptor %d: %w", path, fd, err)
	}
	syscall.CloseOnExec(dup)
	f := os.NewFile(uintptr(dup), path)
	var w io.WriteCloser = f
	if fd == 1 { // an output to descriptor 1 by another name (/dev/stdout)
		w = struct {
			io.Writer
			io.Closer
		}{StdoutWriter(f), f}
	}
	return &File{path: path, kind: kindThrough, w: w}, nil
}

// ErrStdoutClosed marks a write to standard output that failed because
// its reader went away (a broken pipe: saber-hx run | head -1). A command
// ends quietly then, as a pipeline's writer does, its other outputs
// aborted as at any failure.
var ErrStdoutClosed = errors.New("standard output closed")

// StdoutWriter is w, standard output, its broken pipe told apart
// (ErrStdoutClosed); w itself where it is one already (a command's
// standard output, which a pipeline's output to "-" writes to).
func StdoutWriter(w io.Writer) io.Writer {
	if _, ok := w.(stdoutWriter); ok {
		return w
	}
	return stdoutWriter{w}
}

type stdoutWriter struct{ w io.Writer }

// IsStdoutWriter reports whether w is the process's standard output:
// os.Stdout, or StdoutWriter of it.
func IsStdoutWriter(w io.Writer) bool {
	if s, ok := w.(stdoutWriter); ok {
		w = s.w
	}
	return w == io.Writer(os.Stdout)
}

func (s stdoutWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		err = fmt.Errorf("%w: %w", ErrStdoutClosed, err)
	}
	return n, err
}

// createThrough opens an existing file that is not a regular file for
// writing, without truncating it.
func createThrough(path string, fi os.FileInfo) (*File, error) {
	if fi.Mode()&os.ModeSocket != 0 {
		target, _, err := resolve(path)
		if err != nil {
			return nil, err
		}
		c, err := net.Dial("unix", target)
		if err != nil {
			return nil, classify(fmt.Errorf("open output: %w", err))
		}
		return &File{path: path, kind: kindThrough, w: c}, nil
	}
	// Not O_TRUNC: a FIFO or a device has no content to cut, and O_TRUNC
	// there is ignored at best. Opening a FIFO waits for its reader.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, classify(fmt.Errorf("open output: %w", err))
	}
	return &File{path: path, kind: kindThrough, w: f}, nil
}

// createReplace creates the temporary file next to target, with the mode
// (and owner) of the existing file fi, or, for a new file, 0666 less the
// umask.
func createReplace(path, target string, fi os.FileInfo) (*File, error) {
	perm := os.FileMode(0o666) // the kernel applies the umask, as for os.Create
	if fi != nil {
		perm = 0o600 // until the chmod below: never readable by more than the old file
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	tmp, err := createTemp(dir, "."+base+".tmp-", perm)
	if err != nil {
		return nil, classify(fmt.Errorf("create temporary file for %s: %w", path, err))
	}
	if fi != nil {
		if err := keepMode(tmp, fi); err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
			return nil, fmt.Errorf("create temporary file for %s: %w", path, err)
		}
	}
	return &File{path: path, target: target, kind: kindReplace, w: tmp, tmp: tmp, name: tmp.Name()}, nil
}

// keepMode gives f the permission bits of the existing file fi and, where
// the process may, its owner.
func keepMode(f *os.File, fi os.FileInfo) error {
	keep := fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
	err := f.Chmod(keep)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && err == nil {
		// Best effort: only a privileged process may give a file away;
		// anyone else's replacement is theirs, as with any editor's save.
		if int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid() {
			if f.Chown(int(st.Uid), int(st.Gid)) == nil {
				err = f.Chmod(keep) // chown clears setuid and setgid
			}
		}
	}
	return err
}

// createTemp is os.CreateTemp with a mode: the kernel applies the umask to
// perm, which os.CreateTemp's fixed 0600 would hide.
func createTemp(dir, prefix string, perm os.FileMode) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) && try < 10000 {
			continue
		}
		return f, err
	}
}

// classify marks the errors that come from the path the user named as
// usage errors: missing, not a directory, not permitted, read-only, a
// directory, a symlink loop, a socket nobody listens on.
func classify(err error) error {
	for _, e := range []error{syscall.ENOENT, syscall.ENOTDIR, syscall.EACCES, syscall.EPERM, syscall.EROFS, syscall.EISDIR, syscall.ELOOP, syscall.ENAMETOOLONG, syscall.ENXIO, syscall.ECONNREFUSED} {
		if errors.Is(err, e) {
			return usageError{err}
		}
	}
	return err
}
