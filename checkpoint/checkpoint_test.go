package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func payloadOf(epoch uint64) []byte {
	return []byte(fmt.Sprintf("state of epoch %d: %s", epoch, bytes.Repeat([]byte{byte(epoch)}, 40)))
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteKeepsTheLastTwo(t *testing.T) {
	dir := t.TempDir()
	for ep := uint64(1); ep <= 5; ep++ {
		require.NoError(t, Write(dir, ep, payloadOf(ep)))
		c, err := Latest(dir)
		require.NoError(t, err)
		assert.Equal(t, ep, c.Epoch)
		assert.Equal(t, payloadOf(ep), c.Payload)
		assert.Empty(t, c.Skipped)
	}
	assert.Equal(t, []string{Name(4), Name(5)}, files(t, dir))
}

func TestEmptyPayload(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Write(dir, 7, nil))
	c, err := Latest(dir)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), c.Epoch)
	assert.Empty(t, c.Payload)
}

func TestLatestWithoutCheckpoints(t *testing.T) {
	_, err := Latest(filepath.Join(t.TempDir(), "absent"))
	assert.ErrorIs(t, err, ErrNone)
	_, err = Latest(t.TempDir())
	assert.ErrorIs(t, err, ErrNone)
}

// A change of any single byte of the newest file is detected, and the
// previous checkpoint is returned with the newest named in Skipped.
func TestCorruptionAtEveryByteFallsBack(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Write(dir, 1, payloadOf(1)))
	require.NoError(t, Write(dir, 2, payloadOf(2)))
	path := filepath.Join(dir, Name(2))
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	for i := range good {
		for _, flip := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(good)
			bad[i] ^= flip
			require.NoError(t, os.WriteFile(path, bad, 0o644))
			c, err := Latest(dir)
			require.NoError(t, err, "byte %d ^ %#x", i, flip)
			assert.Equal(t, uint64(1), c.Epoch, "byte %d ^ %#x", i, flip)
			assert.Equal(t, payloadOf(1), c.Payload)
			require.Len(t, c.Skipped, 1)
			assert.Contains(t, c.Skipped[0].Error(), Name(2))
		}
	}
	require.NoError(t, os.WriteFile(path, good, 0o644))
	c, err := Latest(dir)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), c.Epoch)
}

func TestTruncationAtEveryLengthFallsBack(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Write(dir, 1, payloadOf(1)))
	require.NoError(t, Write(dir, 2, payloadOf(2)))
	path := filepath.Join(dir, Name(2))
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	for n := 0; n < len(good); n++ {
		require.NoError(t, os.WriteFile(path, good[:n], 0o644))
		c, err := Latest(dir)
		require.NoError(t, err, "truncated to %d", n)
		assert.Equal(t, uint64(1), c.Epoch, "truncated to %d", n)
		assert.Len(t, c.Skipped, 1)
	}
	// Extended (a torn write of a longer file over it) is refused too.
	require.NoError(t, os.WriteFile(path, append(bytes.Clone(good), 0), 0o644))
	c, err := Latest(dir)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), c.Epoch)
}

func TestBothCorruptIsNone(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Write(dir, 1, payloadOf(1)))
	require.NoError(t, Write(dir, 2, payloadOf(2)))
	for _, ep := range []uint64{1, 2} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, Name(ep)), []byte("garbage"), 0o644))
	}
	_, err := Latest(dir)
	require.ErrorIs(t, err, ErrNone)
	assert.Contains(t, err.Error(), Name(1))
	assert.Contains(t, err.Error(), Name(2))
}

// A file renamed to another epoch's name is refused: the header's epoch
// is checked against the name.
func TestEpochMustMatchName(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Write(dir, 1, payloadOf(1)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, Name(9)), Encode(3, payloadOf(3)), 0o644))
	c, err := Latest(dir)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), c.Epoch)
	require.Len(t, c.Skipped, 1)
	assert.Contains(t, c.Skipped[0].Error(), "epoch 3")
}

// A crash between writing the temporary file and renaming it leaves the
// temporary file: Latest ignores it, the next Write removes it.
func TestCrashBeforeRename(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Write(dir, 1, payloadOf(1)))
	crash := errors.New("crash")
	d := &Dir{Path: dir, BeforeRename: func() { panic(crash) }}
	func() {
		defer func() { assert.Equal(t, crash, recover()) }()
		_ = d.Write(2, payloadOf(2))
	}()
	names := files(t, dir)
	require.Len(t, names, 2, "the checkpoint and the temporary file: %v", names)
	c, err := Latest(dir)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), c.Epoch)
	assert.Empty(t, c.Skipped, "a temporary file is not a checkpoint")

	require.NoError(t, Write(dir, 2, payloadOf(2)))
	assert.Equal(t, []string{Name(1), Name(2)}, files(t, dir))
}

// TestCrashesLeaveOneTemporaryFile: crashes in the middle of two writes
// in a row leave one temporary file, not two: a write first removes what
// the crashes before it left.
func TestCrashesLeaveOneTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Write(dir, 1, payloadOf(1)))
	crash := errors.New("crash")
	d := &Dir{Path: dir, BeforeRename: func() { panic(crash) }}
	for ep := uint64(2); ep <= 3; ep++ {
		func() {
			defer func() { assert.Equal(t, crash, recover()) }()
			_ = d.Write(ep, payloadOf(ep))
		}()
		names := files(t, dir)
		assert.Len(t, names, 2, "the checkpoint and one temporary file: %v", names)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	d := &Dir{Path: dir}
	require.NoError(t, d.Write(1, payloadOf(1)))
	require.NoError(t, d.Write(2, payloadOf(2)))
	c, err := d.Read(1)
	require.NoError(t, err)
	assert.Equal(t, payloadOf(1), c.Payload)
	_, err = d.Read(3)
	assert.Error(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, Name(1)), []byte("torn"), 0o644))
	_, err = d.Read(1)
	assert.ErrorContains(t, err, "truncated")
}

func TestKeep(t *testing.T) {
	dir := t.TempDir()
	d := &Dir{Path: dir, Keep: 3}
	for ep := uint64(10); ep < 15; ep++ {
		require.NoError(t, d.Write(ep, payloadOf(ep)))
	}
	assert.Equal(t, []string{Name(12), Name(13), Name(14)}, files(t, dir))
}

func TestDecodeRoundTrip(t *testing.T) {
	for _, p := range [][]byte{nil, {0}, payloadOf(1), bytes.Repeat([]byte{0xab}, 1<<16)} {
		ep, got, err := Decode(Encode(42, p))
		require.NoError(t, err)
		assert.Equal(t, uint64(42), ep)
		assert.Equal(t, len(p), len(got))
		assert.True(t, bytes.Equal(p, got))
	}
}

// FuzzDecode: Decode never panics, accepts only what checks, and what it
// accepts re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(1, []byte("payload")))
	f.Add(Encode(0, nil))
	f.Add([]byte(magic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ep, payload, err := Decode(b)
		if err != nil {
			return
		}
		if !bytes.Equal(Encode(ep, payload), b) {
			t.Fatalf("accepted %x, which does not re-encode to itself", b)
		}
	})
}

// TestLock: a directory that one Dir locked cannot be locked by another
// (another process: flock's locks are per open file) until it is let go;
// Unlock without a lock does nothing.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt")
	a, b := &Dir{Path: path}, &Dir{Path: path}
	require.NoError(t, b.Unlock())
	require.NoError(t, a.Lock())
	err := b.Lock()
	require.ErrorIs(t, err, ErrInUse)
	assert.Contains(t, err.Error(), path)
	require.NoError(t, a.Unlock())
	_, err = os.Stat(path)
	assert.True(t, os.IsNotExist(err), "the directory Lock made, left empty, is gone: %v", err)
	require.NoError(t, b.Lock())
	require.NoError(t, b.Unlock())
	// The lock file is not a checkpoint; a directory with checkpoints
	// stays.
	require.NoError(t, a.Lock())
	require.NoError(t, a.Write(1, []byte("x")))
	cp, err := a.Latest()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), cp.Epoch)
	require.NoError(t, a.Unlock())
	_, err = a.Latest()
	assert.NoError(t, err)
}

// TestNotes: a note is stored and read back, stays through checkpoints'
// writes and pruning, and its name is neither a checkpoint's, a temporary
// file's, the lock's nor a path.
func TestNotes(t *testing.T) {
	d := &Dir{Path: t.TempDir()}
	_, ok, err := d.ReadNote("id")
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, d.WriteNote("id", []byte("a\n")))
	for e := uint64(1); e <= 4; e++ {
		require.NoError(t, d.Write(e, []byte("p")))
	}
	require.NoError(t, d.WriteNote("id", []byte("b\n")))
	b, ok, err := d.ReadNote("id")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "b\n", string(b))
	c, err := d.Latest()
	require.NoError(t, err)
	assert.Equal(t, uint64(4), c.Epoch)
	for _, name := range []string{"", "ckpt-00000000000000000009.bin", ".ckpt-x.tmp", LockName, "a/b", "../x"} {
		assert.Error(t, d.WriteNote(name, nil), "%q", name)
	}
}

// TestPruneKeepsValidOnes: after a fallback past a damaged newest file,
// the writes that follow keep Keep valid checkpoints: the damaged file
// counts for none, and goes with the valid ones older than the kept. It
// counted: the next write removed the checkpoint restored and kept the
// damaged one, and one more damage left none (a helper's crash test).
func TestPruneKeepsValidOnes(t *testing.T) {
	path := t.TempDir()
	d := &Dir{Path: path}
	for ep := uint64(1); ep <= 3; ep++ {
		require.NoError(t, d.Write(ep, payloadOf(ep)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(path, Name(3)), []byte("damaged"), 0o644))
	d = &Dir{Path: path} // a restart
	c, err := d.Latest()
	require.NoError(t, err)
	require.Equal(t, uint64(2), c.Epoch)
	names := func() []string {
		m, err := filepath.Glob(filepath.Join(path, "ckpt-*.bin"))
		require.NoError(t, err)
		for i := range m {
			m[i] = filepath.Base(m[i])
		}
		return m
	}
	require.NoError(t, d.Write(4, payloadOf(4)))
	assert.Equal(t, []string{Name(2), Name(3), Name(4)}, names(), "2 and 4 valid: both kept")
	require.NoError(t, os.WriteFile(filepath.Join(path, Name(4)), []byte("damaged too"), 0o644))
	c, err = (&Dir{Path: path}).Latest()
	require.NoError(t, err)
	assert.Equal(t, uint64(2), c.Epoch, "one more damage leaves a valid one")
	require.NoError(t, os.WriteFile(filepath.Join(path, Name(4)), Encode(4, payloadOf(4)), 0o644))
	require.NoError(t, d.Write(5, payloadOf(5)))
	assert.Equal(t, []string{Name(4), Name(5)}, names(), "the damaged 3 goes with 2")
}
