package sink

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeString(t *testing.T, f *File, s string) {
	t.Helper()
	_, err := io.WriteString(f, s)
	require.NoError(t, err)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// assertOnlyFiles checks dir holds exactly names: no temporary file left.
func assertOnlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	assert.ElementsMatch(t, names, got)
}

func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}

func TestCreateNewAndReplace(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "out.csv")
	f, err := Create(dst)
	require.NoError(t, err)
	assert.False(t, f.WritesThrough())
	assert.Equal(t, dst, f.Name())
	writeString(t, f, "one\n")
	_, err = os.Stat(dst)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing at the destination before Commit")
	require.NoError(t, f.Commit())
	assert.Equal(t, "one\n", readFile(t, dst))
	fi, err := os.Stat(dst)
	require.NoError(t, err)
	assert.Equal(t, 0o666&^umask(), fi.Mode().Perm(), "a new file: 0666 less the umask, as os.Create")
	assertOnlyFiles(t, dir, "out.csv")

	// Abort after Commit is a no-op; Commit twice is an error.
	assert.NoError(t, f.Abort())
	assert.Error(t, f.Commit())
	assert.Equal(t, "one\n", readFile(t, dst))

	// Replacing keeps the old file's mode.
	require.NoError(t, os.Chmod(dst, 0o640))
	require.NoError(t, WriteFile(dst, func(w io.Writer) error {
		_, err := io.WriteString(w, "two\n")
		return err
	}))
	assert.Equal(t, "two\n", readFile(t, dst))
	fi, err = os.Stat(dst)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())

	// Even a read-only one (it is replaced, not opened for writing).
	require.NoError(t, os.Chmod(dst, 0o444))
	require.NoError(t, WriteFile(dst, func(w io.Writer) error {
		_, err := io.WriteString(w, "three\n")
		return err
	}))
	fi, err = os.Stat(dst)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o444), fi.Mode().Perm())
	assert.Equal(t, "three\n", readFile(t, dst))
	assertOnlyFiles(t, dir, "out.csv")
}

func TestAbortLeavesDestination(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "out.csv")
	require.NoError(t, os.WriteFile(dst, []byte("old\n"), 0o644))

	f, err := Create(dst)
	require.NoError(t, err)
	writeString(t, f, "partial")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 2, "the temporary file exists while the output is open")
	var tmpName string
	for _, e := range ents {
		if e.Name() != "out.csv" {
			tmpName = e.Name()
		}
	}
	assert.True(t, strings.HasPrefix(tmpName, ".out.csv.tmp-"), tmpName)
	require.NoError(t, f.Abort())
	require.NoError(t, f.Abort(), "idempotent")
	assert.Error(t, f.Commit(), "no commit after abort")
	assert.Equal(t, "old\n", readFile(t, dst))
	assertOnlyFiles(t, dir, "out.csv")

	// A failing writer: old content kept, error names the path, no temp file.
	err = WriteFile(dst, func(w io.Writer) error {
		_, _ = io.WriteString(w, "partial")
		return errors.New("boom")
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom")
	assert.Contains(t, err.Error(), dst)
	assert.Equal(t, "old\n", readFile(t, dst))
	assertOnlyFiles(t, dir, "out.csv")

	// A failing writer for a new file leaves no file at all.
	err = WriteFile(filepath.Join(dir, "new.csv"), func(io.Writer) error { return errors.New("boom") })
	require.Error(t, err)
	assertOnlyFiles(t, dir, "out.csv")

	// Abort from another goroutine, as a signal handler would.
	f, err = Create(dst)
	require.NoError(t, err)
	done := make(chan error)
	go func() { done <- f.Abort() }()
	require.NoError(t, <-done)
	_, err = io.WriteString(f, "x")
	assert.Error(t, err, "writing an aborted output fails")
	assert.Error(t, f.Commit())
	assertOnlyFiles(t, dir, "out.csv")
}

func TestCommitFailureRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "out")
	f, err := Create(dst)
	require.NoError(t, err)
	writeString(t, f, "x")
	// A directory appears at the destination: rename cannot replace it.
	require.NoError(t, os.Mkdir(dst, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "keep"), nil, 0o644))
	err = f.Commit()
	require.Error(t, err)
	assert.Contains(t, err.Error(), dst)
	assertOnlyFiles(t, dir, "out")
	assert.NoError(t, f.Abort())
}

func TestCreateRefusals(t *testing.T) {
	dir := t.TempDir()
	_, err := Create("")
	assert.ErrorIs(t, err, ErrUsage)
	assert.ErrorContains(t, err, "empty")

	_, err = Create(dir)
	assert.ErrorIs(t, err, ErrUsage)
	assert.ErrorContains(t, err, "is a directory")

	// A missing directory fails at Create, before any work, as a usage error.
	_, err = Create(filepath.Join(dir, "nope", "x.csv"))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUsage)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), filepath.Join(dir, "nope", "x.csv"))

	// A "directory" that is a regular file (a read-only directory would do,
	// but tests may run as root, to whom every directory is writable).
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("data"), 0o644))
	_, err = Create(filepath.Join(file, "x.csv"))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUsage)
	assert.ErrorIs(t, err, syscall.ENOTDIR)
	assert.Equal(t, "data", readFile(t, file))

	// A read-only directory, where the process is subject to permissions.
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		require.NoError(t, os.Mkdir(ro, 0o555))
		_, err = Create(filepath.Join(ro, "x.csv"))
		assert.ErrorIs(t, err, ErrUsage)
		assert.ErrorIs(t, err, os.ErrPermission)
	}

	// A symlink loop.
	loop := filepath.Join(dir, "loop")
	require.NoError(t, os.Symlink("loop", loop))
	_, err = Create(loop)
	assert.ErrorIs(t, err, ErrUsage)
	assertOnlyFiles(t, dir, "file", "loop")
}

func TestCreateRefusesAnInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "events.bin")
	require.NoError(t, os.WriteFile(in, []byte("precious"), 0o644))
	hard := filepath.Join(dir, "hard")
	require.NoError(t, os.Link(in, hard))
	soft := filepath.Join(dir, "soft")
	require.NoError(t, os.Symlink("events.bin", soft))
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	other := filepath.Join(dir, "other.csv")
	require.NoError(t, os.WriteFile(other, nil, 0o644))

	for _, tc := range []struct{ out, in string }{
		{in, in}, // the same path
		{filepath.Join(sub, "..", "events.bin"), in}, // another spelling
		{hard, in}, // a hard link
		{in, hard},
		{soft, in}, // the output a symlink to the input
		{in, soft}, // the input a symlink to the output
	} {
		f, err := Create(tc.out, other, tc.in)
		require.Error(t, err, "out %s in %s", tc.out, tc.in)
		assert.Nil(t, f)
		assert.ErrorIs(t, err, ErrSameFile)
		assert.ErrorIs(t, err, ErrUsage)
		assert.Contains(t, err.Error(), tc.out)
		assert.Equal(t, "precious", readFile(t, in))
	}
	assertOnlyFiles(t, dir, "events.bin", "hard", "soft", "sub", "other.csv")
	assertOnlyFiles(t, sub)

	// Inputs that do not exist are not compared; other files are fine.
	f, err := Create(filepath.Join(dir, "out.csv"), in, filepath.Join(dir, "missing"))
	require.NoError(t, err)
	require.NoError(t, f.Abort())

	// Two new paths that resolve to one file.
	same, err := SameFile(filepath.Join(dir, "new"), filepath.Join(sub, "..", "new"))
	require.NoError(t, err)
	assert.True(t, same)
	same, err = SameFile(filepath.Join(dir, "new"), filepath.Join(dir, "new2"))
	require.NoError(t, err)
	assert.False(t, same)
	same, err = SameFile(filepath.Join(dir, "new"), in)
	require.NoError(t, err)
	assert.False(t, same)

	// Outputs: a descriptor named twice is one destination, whatever it
	// is open on (a terminal too, which SameFile never calls the same);
	// /dev/null twice destroys nothing.
	for _, pair := range [][2]string{{"/dev/stdout", "/proc/self/fd/1"}, {"/dev/fd/2", "/dev/stderr"}, {filepath.Join(dir, "new"), filepath.Join(sub, "..", "new")}} {
		same, err = SameOutput(pair[0], pair[1])
		require.NoError(t, err)
		assert.True(t, same, pair)
	}
	same, err = SameOutput("/dev/null", "/dev/null")
	require.NoError(t, err)
	assert.False(t, same)
	same, err = SameOutput(filepath.Join(dir, "new"), "/dev/stdout")
	require.NoError(t, err)
	assert.False(t, same)
}

func TestSymlinkKept(t *testing.T) {
	dir := t.TempDir()
	targetDir := filepath.Join(dir, "data")
	require.NoError(t, os.Mkdir(targetDir, 0o755))
	target := filepath.Join(targetDir, "results.csv")
	require.NoError(t, os.WriteFile(target, []byte("old\n"), 0o600))
	link := filepath.Join(dir, "link.csv")
	require.NoError(t, os.Symlink(filepath.Join("data", "results.csv"), link))
	link2 := filepath.Join(dir, "link2.csv") // a link to the link
	require.NoError(t, os.Symlink("link.csv", link2))

	f, err := Create(link2)
	require.NoError(t, err)
	assertOnlyFiles(t, dir, "data", "link.csv", "link2.csv") // the temp file is in the target's directory
	ents, err := os.ReadDir(targetDir)
	require.NoError(t, err)
	assert.Len(t, ents, 2)
	writeString(t, f, "new\n")
	require.NoError(t, f.Commit())

	for _, l := range []string{link, link2} {
		fi, err := os.Lstat(l)
		require.NoError(t, err)
		assert.NotZero(t, fi.Mode()&os.ModeSymlink, "%s is still a symlink", l)
	}
	assert.Equal(t, "new\n", readFile(t, target))
	fi, err := os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assertOnlyFiles(t, targetDir, "results.csv")

	// A dangling symlink creates its target; the link stays.
	dangling := filepath.Join(dir, "dangling.csv")
	require.NoError(t, os.Symlink(filepath.Join("data", "later.csv"), dangling))
	require.NoError(t, WriteFile(dangling, func(w io.Writer) error {
		_, err := io.WriteString(w, "later\n")
		return err
	}))
	fi, err = os.Lstat(dangling)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink)
	assert.Equal(t, "later\n", readFile(t, filepath.Join(targetDir, "later.csv")))
	assertOnlyFiles(t, targetDir, "results.csv", "later.csv")
}

func TestFIFOWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	got := make(chan string, 1)
	go func() {
		r, err := os.Open(fifo)
		if err != nil {
			got <- "open: " + err.Error()
			return
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			got <- "read: " + err.Error()
			return
		}
		got <- string(b)
	}()
	f, err := Create(fifo)
	require.NoError(t, err)
	assert.True(t, f.WritesThrough())
	writeString(t, f, "through\n")
	require.NoError(t, f.Commit())
	assert.Equal(t, "through\n", <-got)
	fi, err := os.Lstat(fifo)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeNamedPipe, "still a FIFO")
	assertOnlyFiles(t, dir, "fifo")

	// A FIFO that is an input is refused (by inode), before it is opened.
	_, err = Create(fifo, fifo)
	assert.ErrorIs(t, err, ErrSameFile)
}

func TestDevNullWrittenThrough(t *testing.T) {
	before, err := os.Stat("/dev/null")
	require.NoError(t, err)
	require.NotZero(t, before.Mode()&os.ModeCharDevice)
	f, err := Create("/dev/null", "/dev/null") // a character device is never "the same file"
	require.NoError(t, err)
	assert.True(t, f.WritesThrough())
	writeString(t, f, "discarded\n")
	require.NoError(t, f.Commit())
	after, err := os.Stat("/dev/null")
	require.NoError(t, err)
	assert.NotZero(t, after.Mode()&os.ModeCharDevice, "/dev/null is still a character device")
	assert.True(t, os.SameFile(before, after))

	// Abort on a written-through output only closes it.
	f, err = Create("/dev/null")
	require.NoError(t, err)
	require.NoError(t, f.Abort())
	require.NoError(t, f.Abort())
}

func TestProcessFDWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	// A regular file reached through a descriptor is written at that
	// descriptor's offset, not replaced: what was before stays.
	path := filepath.Join(dir, "log")
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer w.Close()
	_, err = io.WriteString(w, "header\n")
	require.NoError(t, err)
	for _, p := range []string{"/dev/fd/", "/proc/self/fd/"} {
		f, err := Create(p + strconv.Itoa(int(w.Fd())))
		require.NoError(t, err, p)
		assert.True(t, f.WritesThrough())
		writeString(t, f, "via "+p+"\n")
		require.NoError(t, f.Commit())
	}
	_, err = io.WriteString(w, "still open\n")
	require.NoError(t, err, "closing the output leaves the descriptor open")
	assert.Equal(t, "header\nvia /dev/fd/\nvia /proc/self/fd/\nstill open\n", readFile(t, path))
	assertOnlyFiles(t, dir, "log")

	// ... and it is compared with the inputs like any other path.
	_, err = Create("/dev/fd/"+strconv.Itoa(int(w.Fd())), path)
	assert.ErrorIs(t, err, ErrSameFile)

	// A pipe behind a descriptor.
	r, pw, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	f, err := Create("/proc/self/fd/" + strconv.Itoa(int(pw.Fd())))
	require.NoError(t, err)
	writeString(t, f, "piped")
	require.NoError(t, f.Commit())
	require.NoError(t, pw.Close())
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "piped", string(b))
}

func TestSocketWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- "accept: " + err.Error()
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- string(b)
	}()
	f, err := Create(path)
	require.NoError(t, err)
	assert.True(t, f.WritesThrough())
	writeString(t, f, "over a socket")
	require.NoError(t, f.Commit())
	assert.Equal(t, "over a socket", <-got)
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSocket, "still a socket")
}

// TestIsStdout: "-", /dev/stdout and /proc/self/fd/1 are standard output,
// as is the file it was redirected to; another file is not. (Not
// /dev/stderr: under go test it is stdout's pipe.)
func TestIsStdout(t *testing.T) {
	assert.True(t, IsStdout("-"))
	assert.True(t, IsStdout("/dev/stdout"))
	assert.True(t, IsStdout("/proc/self/fd/1"))
	assert.False(t, IsStdout(filepath.Join(t.TempDir(), "out.csv")))
	if fi, err := os.Stdout.Stat(); err == nil && fi.Mode().IsRegular() {
		assert.True(t, IsStdout(os.Stdout.Name()), "the file stdout goes to")
	}
}

// TestIsStdin: standard input's names, not a file of the same content.
func TestIsStdin(t *testing.T) {
	for _, p := range []string{"-", "/dev/stdin", "/proc/self/fd/0", "/dev/fd/0"} {
		assert.True(t, IsStdin(p), p)
	}
	assert.False(t, IsStdin("/dev/stdout"))
	assert.False(t, IsStdin(filepath.Join(t.TempDir(), "in.csv")))
}

// TestStdoutWriter: a write whose reader went away (EPIPE) is marked
// ErrStdoutClosed, the broken pipe kept; os.Stdout wrapped is still the
// process's standard output.
func TestStdoutWriter(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, r.Close())
	_, err = StdoutWriter(w).Write([]byte("row\n"))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrStdoutClosed)
	assert.ErrorIs(t, err, syscall.EPIPE)
	assert.True(t, IsStdoutWriter(os.Stdout))
	assert.True(t, IsStdoutWriter(StdoutWriter(os.Stdout)))
	assert.False(t, IsStdoutWriter(StdoutWriter(w)))
	assert.Equal(t, StdoutWriter(w), StdoutWriter(StdoutWriter(w)), "wrapped once")
}

// openFDsUnder counts the process's open descriptors of files under dir.
func openFDsUnder(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			n++
		}
	}
	return n
}

// TestSuspendReopens: a suspended file holds no descriptor; the next
// Write appends to it, Commit publishes what every stretch wrote, Abort
// removes it, suspended or not; a written-through file stays open.
func TestSuspendReopens(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	f, err := Create(out)
	require.NoError(t, err)
	writeString(t, f, "a")
	require.NoError(t, f.Suspend())
	require.NoError(t, f.Suspend(), "twice")
	assert.Zero(t, openFDsUnder(t, dir))
	writeString(t, f, "b")
	assert.Equal(t, 1, openFDsUnder(t, dir))
	require.NoError(t, f.Suspend())
	writeString(t, f, "c")
	require.NoError(t, f.Suspend())
	require.NoError(t, f.Commit())
	assert.Equal(t, "abc", readFile(t, out))
	assert.Zero(t, openFDsUnder(t, dir))
	_, err = f.Write([]byte("d"))
	assert.Error(t, err, "after Commit")

	g, err := Create(filepath.Join(dir, "other"))
	require.NoError(t, err)
	writeString(t, g, "x")
	require.NoError(t, g.Suspend())
	require.NoError(t, g.Abort())
	assertOnlyFiles(t, dir, "out") // the aborted file's temporary file is gone

	through, err := Create(os.DevNull)
	require.NoError(t, err)
	require.NoError(t, through.Suspend())
	writeString(t, through, "y")
	require.NoError(t, through.Commit())
}
