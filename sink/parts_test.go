package sink

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeParts(t *testing.T, p *Parts, s string) {
	t.Helper()
	_, err := p.Write([]byte(s))
	require.NoError(t, err)
}

// catParts is "cat P.part-*": the parts in lexical order.
func catParts(t *testing.T, p *Parts) string {
	t.Helper()
	names, err := filepath.Glob(p.Pattern())
	require.NoError(t, err)
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(readFile(t, n))
	}
	return b.String()
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func partName(base string, epoch uint64) string { return fmt.Sprintf("%s.part-%020d", base, epoch) }
func progName(base string, epoch uint64) string {
	return fmt.Sprintf(".%s.part-%020d.inprogress", base, epoch)
}

// countSyncs makes p count its directory syncs (and still do them).
func countSyncs(p *Parts) *int {
	n := new(int)
	p.syncDir = func(dir string) error {
		*n++
		return syncDir(dir)
	}
	return n
}

// TestPartsEpochs: each epoch's rows in its own part, committed by
// PreCommit and Commit; an epoch with no rows writes none; a write between
// a PreCommit and its Commit goes to the next epoch; cat of the parts in
// lexical order is everything written, in order, past epoch 9 and 10.
func TestPartsEpochs(t *testing.T) {
	dir := t.TempDir()
	p, err := CreateParts(filepath.Join(dir, "out.csv"))
	require.NoError(t, err)
	require.NoError(t, p.Recover(8, 9, nil))
	assert.Equal(t, uint64(9), p.Epoch())
	assert.Empty(t, dirNames(t, dir), "nothing before the first write")

	writeParts(t, p, "h\n")
	writeParts(t, p, "a\n")
	assert.Equal(t, []string{progName("out.csv", 9)}, dirNames(t, dir))
	require.NoError(t, p.PreCommit(9))
	assert.Equal(t, []string{progName("out.csv", 9)}, dirNames(t, dir), "pre-committed: not yet a part")
	writeParts(t, p, "b\n") // epoch 10, before 9's commit
	require.NoError(t, p.Commit(9))
	assert.Equal(t, "h\na\n", readFile(t, filepath.Join(dir, partName("out.csv", 9))))
	require.NoError(t, p.PreCommit(10))
	require.NoError(t, p.Commit(10))
	require.NoError(t, p.PreCommit(11)) // no rows
	require.NoError(t, p.Commit(11))
	writeParts(t, p, "c\n")
	require.NoError(t, p.PreCommit(12))
	require.NoError(t, p.Commit(12))
	assert.Equal(t, []string{partName("out.csv", 9), partName("out.csv", 10), partName("out.csv", 12)}, dirNames(t, dir))
	assert.Equal(t, "h\na\nb\nc\n", catParts(t, p))
	fi, err := os.Stat(filepath.Join(dir, partName("out.csv", 12)))
	require.NoError(t, err)
	assert.Equal(t, 0o666&^umask(), fi.Mode().Perm(), "a new output's parts: 0666 less the umask")

	assert.Error(t, p.PreCommit(12), "an epoch pre-committed twice")
	assert.Error(t, p.Commit(13), "an epoch not pre-committed")
	require.NoError(t, p.Abort())
	_, err = p.Write([]byte("x"))
	assert.Error(t, err, "a write after Abort")
}

// TestPartsDirectorySync: the directory is synced once the pre-committed
// file is closed (its name durable before the checkpoint is written),
// after the commit's rename, and after a recovery that changed anything;
// not for an epoch without rows. A failed sync fails the pre-commit,
// which leaves no part.
func TestPartsDirectorySync(t *testing.T) {
	dir := t.TempDir()
	p, err := CreateParts(filepath.Join(dir, "out"))
	require.NoError(t, err)
	syncs := countSyncs(p)
	require.NoError(t, p.Recover(0, 1, nil))
	assert.Equal(t, 0, *syncs, "a recovery that changed nothing")
	writeParts(t, p, "a")
	require.NoError(t, p.PreCommit(1))
	assert.Equal(t, 1, *syncs, "pre-commit")
	require.NoError(t, p.Commit(1))
	assert.Equal(t, 2, *syncs, "commit")
	require.NoError(t, p.PreCommit(2))
	require.NoError(t, p.Commit(2))
	assert.Equal(t, 2, *syncs, "an epoch without rows")
	writeParts(t, p, "b")
	require.NoError(t, p.PreCommit(3)) // a crash before the commit

	q, err := CreateParts(filepath.Join(dir, "out"))
	require.NoError(t, err)
	qs := countSyncs(q)
	require.NoError(t, q.Recover(3, 4, nil))
	assert.Equal(t, 1, *qs, "the recovery's roll-forward")

	q.syncDir = func(string) error { return syscall.EIO }
	writeParts(t, q, "c")
	assert.ErrorIs(t, q.PreCommit(4), syscall.EIO)
	assert.Equal(t, []string{partName("out", 1), partName("out", 3)}, dirNames(t, dir), "a failed pre-commit leaves nothing")
}

// TestPartsRecover: a crash after a pre-commit, restarted from that
// epoch's checkpoint, commits the in-progress file (rolled forward); from
// the checkpoint before, removes it; committed parts after the restored
// checkpoint are removed; every step noted; files that are not parts are
// left alone. Skipping the roll-forward (or the removal) in Recover fails
// this test.
func TestPartsRecover(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv")
	p, err := CreateParts(out)
	require.NoError(t, err)
	require.NoError(t, p.Recover(0, 1, nil))
	for e, s := range []string{"h\n", "a\n", "b\n"} {
		writeParts(t, p, s)
		require.NoError(t, p.PreCommit(uint64(e+1)))
		require.NoError(t, p.Commit(uint64(e+1)))
	}
	writeParts(t, p, "c\n")
	require.NoError(t, p.PreCommit(4))
	writeParts(t, p, "d\n") // epoch 5, in progress: a kill now
	others := []string{"out.csv.partial", ".out.csv.tmp-x", "out.csv", "other.part-" + fmt.Sprintf("%020d", 9)}
	for _, n := range others {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("keep"), 0o644))
	}

	// Restarted from checkpoint 4: epoch 4 rolled forward, 5 removed.
	q, err := CreateParts(out)
	require.NoError(t, err)
	var notes []string
	note := func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }
	require.NoError(t, q.Recover(4, 5, note))
	assert.Equal(t, uint64(5), q.Epoch())
	assert.Equal(t, "h\na\nb\nc\n", catParts(t, q))
	require.Len(t, notes, 2)
	assert.Contains(t, notes[0], partName("out.csv", 4)+": committed")
	assert.Contains(t, notes[1], progName("out.csv", 5)+": removed")
	assert.ElementsMatch(t, append([]string{partName("out.csv", 1), partName("out.csv", 2), partName("out.csv", 3), partName("out.csv", 4)}, others...),
		dirNames(t, dir))

	// Restarted from checkpoint 2 (the newer ones corrupt): parts 3 and 4
	// removed, the next part is 3's.
	notes = nil
	r, err := CreateParts(out)
	require.NoError(t, err)
	require.NoError(t, r.Recover(2, 3, note))
	assert.Equal(t, "h\na\n", catParts(t, r))
	require.Len(t, notes, 2)
	assert.Contains(t, notes[0], partName("out.csv", 3)+": removed")
	writeParts(t, r, "B\n")
	require.NoError(t, r.PreCommit(3))
	require.NoError(t, r.Commit(3))
	assert.Equal(t, "h\na\nB\n", catParts(t, r))

	// A commit never replaces a part that is there.
	writeParts(t, r, "C\n")
	require.NoError(t, r.PreCommit(4))
	require.NoError(t, os.WriteFile(filepath.Join(dir, partName("out.csv", 4)), []byte("stale\n"), 0o644))
	assert.ErrorIs(t, r.Commit(4), fs.ErrExist)
	require.NoError(t, os.Remove(filepath.Join(dir, partName("out.csv", 4))))
	require.NoError(t, os.Remove(filepath.Join(dir, progName("out.csv", 4))))

	// A part and an in-progress file of one epoch: not settled by guess.
	require.NoError(t, os.WriteFile(filepath.Join(dir, progName("out.csv", 3)), []byte("x"), 0o644))
	s, err := CreateParts(out)
	require.NoError(t, err)
	assert.Error(t, s.Recover(3, 4, nil))
	c, err := s.Committed()
	require.NoError(t, err)
	assert.Len(t, c, 3)
}

// TestPartsAbort: Abort removes the epoch in progress and keeps what is
// committed; a pre-committed epoch is left for the recovery (its
// checkpoint may be durable).
func TestPartsAbort(t *testing.T) {
	dir := t.TempDir()
	p, err := CreateParts(filepath.Join(dir, "out"))
	require.NoError(t, err)
	require.NoError(t, p.Recover(0, 1, nil))
	writeParts(t, p, "a")
	require.NoError(t, p.PreCommit(1))
	require.NoError(t, p.Commit(1))
	writeParts(t, p, "b")
	require.NoError(t, p.Abort())
	require.NoError(t, p.Abort(), "idempotent")
	assert.Equal(t, []string{partName("out", 1)}, dirNames(t, dir))

	q, err := CreateParts(filepath.Join(dir, "out"))
	require.NoError(t, err)
	require.NoError(t, q.Recover(1, 2, nil))
	writeParts(t, q, "c")
	require.NoError(t, q.PreCommit(2))
	require.NoError(t, q.Abort())
	assert.Equal(t, []string{progName("out", 2), partName("out", 1)}, dirNames(t, dir), "the pre-committed epoch stays")
}

// TestPartsRecoverNext: the next epoch written is the one Recover names,
// past the one it settles on (a run started afresh numbers its
// checkpoints past the directory's).
func TestPartsRecoverNext(t *testing.T) {
	dir := t.TempDir()
	p, err := CreateParts(filepath.Join(dir, "out"))
	require.NoError(t, err)
	assert.Error(t, p.Recover(3, 3, nil), "next must be past epoch")
	require.NoError(t, p.Recover(0, 5, nil))
	writeParts(t, p, "a")
	assert.Error(t, p.PreCommit(1), "epoch 5 is being written")
	require.NoError(t, p.PreCommit(5))
	require.NoError(t, p.Commit(5))
	assert.Equal(t, []string{partName("out", 5)}, dirNames(t, dir))
}

// TestPartsRecoverRemovesProbes: a probe of CreateParts that a kill -9
// left between its creation and its removal is removed on recovery, with
// a note; another output's probe in the directory is not.
func TestPartsRecoverRemovesProbes(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{".out.probe-x1", ".other.probe-x2"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o600))
	}
	p, err := CreateParts(filepath.Join(dir, "out"))
	require.NoError(t, err)
	var notes []string
	require.NoError(t, p.Recover(0, 1, func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }))
	assert.Equal(t, []string{".other.probe-x2"}, dirNames(t, dir))
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], ".out.probe-x1: removed (a probe of the directory, left by a crash)")
}

// TestPartsRefused: outputs that cannot be taken back (a FIFO, a device,
// a process's descriptor), a directory, an input (P itself, or one of its
// parts), a missing directory: usage errors, nothing created.
func TestPartsRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	in := filepath.Join(dir, "in.csv")
	require.NoError(t, os.WriteFile(in, []byte("x"), 0o644))
	part := filepath.Join(dir, partName("out", 1))
	require.NoError(t, os.WriteFile(part, []byte("x"), 0o644))
	for _, c := range []struct {
		path   string
		inputs []string
		msg    string
	}{
		{"", nil, "empty"},
		{fifo, nil, "not a regular file"},
		{"/dev/null", nil, "not a regular file"},
		{"/dev/stdout", nil, "file descriptor"},
		{dir, nil, "is a directory"},
		{in, []string{in}, "same file"},
		{filepath.Join(dir, "out"), []string{part}, "same file"},
		{filepath.Join(dir, "missing", "out"), nil, "no such file"},
	} {
		_, err := CreateParts(c.path, c.inputs...)
		require.Error(t, err, c.path)
		assert.ErrorIs(t, err, ErrUsage, c.path)
		assert.Contains(t, err.Error(), c.msg, c.path)
	}
	assert.ElementsMatch(t, []string{"fifo", "in.csv", partName("out", 1)}, dirNames(t, dir))
}

// TestPartsSymlinkAndMode: a symlinked output's parts are named after its
// target, beside it, the link untouched; the parts take an existing
// output's mode, else the newest committed part's.
func TestPartsSymlinkAndMode(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	target := filepath.Join(elsewhere, "real.csv")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o640))
	require.NoError(t, os.Chmod(target, 0o640))
	link := filepath.Join(dir, "out.csv")
	require.NoError(t, os.Symlink(target, link))
	p, err := CreateParts(link)
	require.NoError(t, err)
	require.NoError(t, p.Recover(0, 1, nil))
	writeParts(t, p, "a")
	require.NoError(t, p.PreCommit(1))
	require.NoError(t, p.Commit(1))
	fi, err := os.Stat(filepath.Join(elsewhere, partName("real.csv", 1)))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	assert.Equal(t, "old", readFile(t, target), "the output itself is never written")
	l, err := os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, target, l)

	require.NoError(t, os.Remove(target))
	require.NoError(t, os.Chmod(filepath.Join(elsewhere, partName("real.csv", 1)), 0o600))
	q, err := CreateParts(link)
	require.NoError(t, err)
	require.NoError(t, q.Recover(1, 2, nil))
	writeParts(t, q, "b")
	require.NoError(t, q.PreCommit(2))
	require.NoError(t, q.Commit(2))
	fi, err = os.Stat(filepath.Join(elsewhere, partName("real.csv", 2)))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the newest part's mode")
}
