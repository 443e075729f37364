// Package checkpoint stores a run's checkpoints: numbered payloads
// (epochs) written atomically into a directory, the last two kept, read
// back with their integrity checked.
//
// A checkpoint file is named ckpt-EPOCH.bin (EPOCH: 20 decimal digits, so
// that names sort by epoch) and holds a header and the payload:
//
//	magic    8 bytes  "SHXCKPT\x00"
//	version  uint32   little-endian, Version
//	epoch    uint64   the epoch, as in the name
//	length   uint64   the payload's bytes
//	crc      uint32   CRC-32C (Castagnoli) of the header's first 28 bytes and the payload
//	payload  length bytes
//
// Write goes through a temporary file (".ckpt-*.tmp" in the same
// directory), fsyncs it, renames it into place and fsyncs the directory:
// a crash leaves either the previous checkpoints or the new one, and at
// worst a temporary file, which Latest ignores and the next Write removes.
// Latest returns the newest checkpoint that checks (magic, version, epoch
// against the name, length against the file, checksum), and reports every
// newer one it had to pass over, so that a torn or corrupt newest file
// falls back to the previous one.
package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Version is the file format's version.
const Version = 1

const (
	magic      = "SHXCKPT\x00"
	headerSize = 8 + 4 + 8 + 8 + 4
	prefix     = "ckpt-"
	suffix     = ".bin"
	tmpPrefix  = ".ckpt-"
	tmpSuffix  = ".tmp"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrNone is Latest's error where the directory holds no valid checkpoint
// (none at all, or only invalid ones: see Skipped).
var ErrNone = errors.New("no valid checkpoint")

// Dir is a checkpoint directory.
type Dir struct {
	Path string
	lock *os.File // Lock's
	made bool     // Lock made the directory
	// Keep is how many checkpoints Write leaves (the newest); 0: 2.
	Keep int
	// BeforeRename, if set, runs after the temporary file is written and
	// synced and before it is renamed into place (tests: a crash there).
	BeforeRename func()
	// damaged are the files Latest found newer than the checkpoint it
	// returned that did not check: Write's pruning does not count them
	// among those it keeps.
	damaged map[uint64]bool
}

// Checkpoint is one checkpoint read back.
type Checkpoint struct {
	Epoch   uint64
	Payload []byte
	Path    string
	// Skipped are the newer files that did not check, newest first, each
	// error naming the file and what is wrong with it.
	Skipped []error
}

// Write stores payload as epoch in dir (see Dir.Write).
func Write(dir string, epoch uint64, payload []byte) error {
	return (&Dir{Path: dir}).Write(epoch, payload)
}

// Latest reads the newest valid checkpoint of dir (see Dir.Latest).
func Latest(dir string) (*Checkpoint, error) { return (&Dir{Path: dir}).Latest() }

// Name is the file name of epoch's checkpoint.
func Name(epoch uint64) string { return fmt.Sprintf("%s%020d%s", prefix, epoch, suffix) }

// Encode returns the file contents of epoch's checkpoint of payload.
func Encode(epoch uint64, payload []byte) []byte {
	b := make([]byte, headerSize, headerSize+len(payload))
	copy(b, magic)
	binary.LittleEndian.PutUint32(b[8:], Version)
	binary.LittleEndian.PutUint64(b[12:], epoch)
	binary.LittleEndian.PutUint64(b[20:], uint64(len(payload)))
	crc := crc32.Update(crc32.Checksum(b[:28], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(b[28:], crc)
	return append(b, payload...)
}

// Decode checks a checkpoint file's contents and returns its epoch and
// payload (a subslice of b).
func Decode(b []byte) (epoch uint64, payload []byte, err error) {
	if len(b) < headerSize {
		return 0, nil, fmt.Errorf("truncated: %d bytes, shorter than the %d-byte header", len(b), headerSize)
	}
	if string(b[:8]) != magic {
		return 0, nil, errors.New("not a checkpoint (bad magic)")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != Version {
		return 0, nil, fmt.Errorf("version %d, want %d", v, Version)
	}
	epoch = binary.LittleEndian.Uint64(b[12:])
	n := binary.LittleEndian.Uint64(b[20:])
	if n != uint64(len(b)-headerSize) {
		return 0, nil, fmt.Errorf("truncated or extended: payload of %d bytes, header says %d", len(b)-headerSize, n)
	}
	payload = b[headerSize:]
	crc := crc32.Update(crc32.Checksum(b[:28], castagnoli), castagnoli, payload)
	if want := binary.LittleEndian.Uint32(b[28:]); crc != want {
		return 0, nil, fmt.Errorf("checksum %08x, header says %08x: corrupt", crc, want)
	}
	return epoch, payload, nil
}

// Write removes any temporary file left by an earlier crash (one writer
// per directory: none is another's), stores payload as checkpoint epoch,
// atomically, and then removes all but the newest Keep checkpoints. A
// crash in the middle of a write so leaves one temporary file at most,
// however many crashes came before.
func (d *Dir) Write(epoch uint64, payload []byte) error {
	if err := d.writeAtomic(Name(epoch), Encode(epoch, payload), d.BeforeRename); err != nil {
		return fmt.Errorf("checkpoint %d: %w", epoch, err)
	}
	return d.prune(epoch)
}

// writeAtomic stores data as the file name of the directory: through a
// temporary file, synced, renamed into place (before, if set, runs just
// before the rename), the directory synced.
func (d *Dir) writeAtomic(name string, data []byte, before func()) error {
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		return err
	}
	if err := d.removeLeftovers(); err != nil {
		return err
	}
	f, err := os.CreateTemp(d.Path, tmpPrefix+"*"+tmpSuffix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if before != nil {
		before()
	}
	if err := os.Rename(tmp, filepath.Join(d.Path, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := syncDir(d.Path); err != nil {
		return fmt.Errorf("sync directory %s: %w", d.Path, err)
	}
	return nil
}

// A note is a small file a run keeps beside its checkpoints, for as long
// as the directory (pipeline: the identity of its Kafka outputs'
// transactions). Its name is neither a checkpoint's nor a temporary
// file's.
func noteName(name string) error {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, prefix) || strings.HasPrefix(name, tmpPrefix) || name == LockName {
		return fmt.Errorf("checkpoint note %q: not a note's name", name)
	}
	return nil
}

// ReadNote returns note name's contents (ok false: there is none).
func (d *Dir) ReadNote(name string) (data []byte, ok bool, err error) {
	if err := noteName(name); err != nil {
		return nil, false, err
	}
	data, err = os.ReadFile(filepath.Join(d.Path, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("checkpoint note: %w", err)
	}
	return data, true, nil
}

// WriteNote stores note name, atomically and durably.
func (d *Dir) WriteNote(name string, data []byte) error {
	if err := noteName(name); err != nil {
		return err
	}
	if err := d.writeAtomic(name, data, nil); err != nil {
		return fmt.Errorf("checkpoint note %s: %w", name, err)
	}
	return nil
}

// removeLeftovers removes the temporary files of writes that a crash cut
// short.
func (d *Dir) removeLeftovers() error {
	ents, err := os.ReadDir(d.Path)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if name := e.Name(); strings.HasPrefix(name, tmpPrefix) && strings.HasSuffix(name, tmpSuffix) {
			if err := os.Remove(filepath.Join(d.Path, name)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}

func syncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// prune removes the checkpoints older than the newest Keep that are not
// damaged (Latest's finding), damaged ones among them: a damaged newer
// file counted among the kept would leave one valid checkpoint, or none
// after one more damage, where Keep promises more.
func (d *Dir) prune(epoch uint64) error {
	keep := d.Keep
	if keep <= 0 {
		keep = 2
	}
	ents, err := os.ReadDir(d.Path)
	if err != nil {
		return fmt.Errorf("checkpoint %d: prune: %w", epoch, err)
	}
	var epochs, valid []uint64
	for _, e := range ents {
		if ep, ok := parseName(e.Name()); ok {
			epochs = append(epochs, ep)
			if !d.damaged[ep] {
				valid = append(valid, ep)
			}
		}
	}
	if len(valid) <= keep {
		return nil
	}
	slices.Sort(valid)
	oldest := valid[len(valid)-keep] // the oldest kept
	for _, ep := range epochs {
		if ep >= oldest {
			continue
		}
		if err := os.Remove(filepath.Join(d.Path, Name(ep))); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("checkpoint %d: prune: %w", epoch, err)
		}
		delete(d.damaged, ep)
	}
	return nil
}

func parseName(name string) (uint64, bool) {
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	digits := name[len(prefix) : len(name)-len(suffix)]
	if len(digits) != 20 {
		return 0, false
	}
	ep, err := strconv.ParseUint(digits, 10, 64)
	return ep, err == nil
}

func (d *Dir) markDamaged(epoch uint64) {
	if d.damaged == nil {
		d.damaged = map[uint64]bool{}
	}
	d.damaged[epoch] = true
}

// Highest returns the highest epoch a checkpoint file in the directory is
// named for, whether or not it checks (0: none, or no directory).
func (d *Dir) Highest() (uint64, error) {
	ents, err := os.ReadDir(d.Path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("checkpoint directory %s: %w", d.Path, err)
	}
	var most uint64
	for _, e := range ents {
		if ep, ok := parseName(e.Name()); ok {
			most = max(most, ep)
		}
	}
	return most, nil
}

// Read reads checkpoint epoch, checked as Latest checks it.
func (d *Dir) Read(epoch uint64) (*Checkpoint, error) {
	path := filepath.Join(d.Path, Name(epoch))
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	ep, payload, err := Decode(b)
	if err == nil && ep != epoch {
		err = fmt.Errorf("holds epoch %d, not its name's", ep)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return &Checkpoint{Epoch: ep, Payload: payload, Path: path}, nil
}

// Latest reads the newest checkpoint that checks. A directory that does
// not exist or holds none gives ErrNone; newer files that did not check
// are in Skipped (and, where none checks, in the error).
func (d *Dir) Latest() (*Checkpoint, error) {
	ents, err := os.ReadDir(d.Path)
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("checkpoint directory %s: %w", d.Path, ErrNone)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint directory %s: %w", d.Path, err)
	}
	var epochs []uint64
	for _, e := range ents {
		if ep, ok := parseName(e.Name()); ok && e.Type().IsRegular() {
			epochs = append(epochs, ep)
		}
	}
	slices.Sort(epochs)
	var skipped []error
	for i := len(epochs) - 1; i >= 0; i-- {
		path := filepath.Join(d.Path, Name(epochs[i]))
		b, err := os.ReadFile(path)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("checkpoint %s: %w", path, err))
			d.markDamaged(epochs[i])
			continue
		}
		ep, payload, err := Decode(b)
		if err == nil && ep != epochs[i] {
			err = fmt.Errorf("holds epoch %d, not its name's", ep)
		}
		if err != nil {
			skipped = append(skipped, fmt.Errorf("checkpoint %s: %w", path, err))
			d.markDamaged(epochs[i])
			continue
		}
		return &Checkpoint{Epoch: ep, Payload: payload, Path: path, Skipped: skipped}, nil
	}
	return nil, fmt.Errorf("checkpoint directory %s: %w", d.Path, errors.Join(append([]error{ErrNone}, skipped...)...))
}
