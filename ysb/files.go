package ysb

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ResultsHeader is the exact first line of a results CSV file.
const ResultsHeader = "window_start,campaign_id,count,max_event_time"

// WriteResultsCSV writes the header then one line per row, in the given order,
// with campaign_id as a lowercase canonical UUID.
func WriteResultsCSV(w io.Writer, rows []Row) error {
	bw := bufio.NewWriter(w)
	if _, err := bw.WriteString(ResultsHeader + "\n"); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	line := make([]byte, 0, 128)
	for i, r := range rows {
		line = strconv.AppendInt(line[:0], r.WindowStart, 10)
		line = append(line, ',')
		line = r.CampaignID.appendText(line)
		line = append(line, ',')
		line = strconv.AppendInt(line, r.Count, 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, r.MaxEventTime, 10)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("write results row %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// ReadResultsCSV parses what WriteResultsCSV writes (trailing \r and trailing
// empty lines tolerated). Errors name name and the 1-based line.
func ReadResultsCSV(r io.Reader, name string) ([]Row, error) {
	lr := newLineReader(r, name)
	if err := lr.header(ResultsHeader); err != nil {
		return nil, err
	}
	var rows []Row
	for {
		line, ok, err := lr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return rows, nil
		}
		f := strings.Split(line, ",")
		if len(f) != 4 {
			return nil, lr.errorf("want 4 fields %q, got %d in %s", ResultsHeader, len(f), quoteTrunc(line))
		}
		var row Row
		if row.WindowStart, err = strconv.ParseInt(f[0], 10, 64); err != nil {
			return nil, lr.errorf("bad window_start %s: %w", quoteTrunc(f[0]), err)
		}
		if row.CampaignID, err = parseUUID(f[1]); err != nil {
			return nil, lr.errorf("bad campaign_id %s: %w", quoteTrunc(f[1]), err)
		}
		if row.Count, err = strconv.ParseInt(f[2], 10, 64); err != nil {
			return nil, lr.errorf("bad count %s: %w", quoteTrunc(f[2]), err)
		}
		if row.MaxEventTime, err = strconv.ParseInt(f[3], 10, 64); err != nil {
			return nil, lr.errorf("bad max_event_time %s: %w", quoteTrunc(f[3]), err)
		}
		rows = append(rows, row)
	}
}

// OpenEvents opens a tuple file and checks that it holds a whole number of
// tuples; on success the caller owns f.
func OpenEvents(path string) (f *os.File, tuples int64, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("open events: %w", err) // *PathError names path
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("open events: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: not a regular file (%s), cannot check its size", path, fi.Mode().Type())
	}
	size := fi.Size()
	if rem := size % TupleSize; rem != 0 {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %d bytes is not a whole number of %d-byte tuples (%d trailing bytes)", path, size, TupleSize, rem)
	}
	return f, size / TupleSize, nil
}

// genChunk is the Fill/write unit of GenerateFiles: large enough to amortise
// the write syscall, small enough to stay in L2 between Fill and write.
const genChunk = 1 << 20

// GenerateFiles writes tuples generator tuples to eventsPath and the
// generator's campaigns table to campaignsPath. Both are written to temp files
// in their target directories and renamed into place only after both were
// written completely, so an error leaves no partial file; only a failure of
// the final rename of the campaigns file can leave the new events file next
// to an old table. Memory use is one chunk whatever the tuple count.
func GenerateFiles(eventsPath, campaignsPath string, tuples uint64, cfg GenConfig) error {
	g, err := NewGenerator(cfg)
	if err != nil {
		return err
	}
	if tuples > (1<<63-1)/TupleSize {
		return fmt.Errorf("ysb: generate %d tuples: size overflows int64", tuples)
	}
	ev, err := createAtomic(eventsPath)
	if err != nil {
		return err
	}
	defer ev.abort()
	camp, err := createAtomic(campaignsPath)
	if err != nil {
		return err
	}
	defer camp.abort()

	buf := make([]byte, genChunk)
	for k := uint64(0); k < tuples; {
		n := min(tuples-k, genChunk/TupleSize)
		b := buf[:n*TupleSize]
		g.Fill(b, k)
		if _, err := ev.f.Write(b); err != nil {
			return fmt.Errorf("%s: write tuples from %d (byte offset %d): %w", eventsPath, k, k*TupleSize, err)
		}
		k += n
	}
	if err := g.Campaigns().WriteCSV(camp.f); err != nil {
		return fmt.Errorf("%s: %w", campaignsPath, err)
	}
	if err := ev.commit(); err != nil {
		return err
	}
	return camp.commit()
}

// WriteFileAtomic writes dst via a temp file in its directory and a rename,
// so readers see either the old dst or the complete new one. If write (or
// anything after it) fails the temp file is removed and dst is untouched.
func WriteFileAtomic(dst string, write func(w io.Writer) error) error {
	a, err := createAtomic(dst)
	if err != nil {
		return err
	}
	defer a.abort()
	if err := write(a.f); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return a.commit()
}

// atomicFile is a temp file that becomes dst on commit. The temp file lives in
// dst's directory because rename is atomic only within one file system.
type atomicFile struct {
	f    *os.File
	dst  string
	done bool
}

func createAtomic(dst string) (*atomicFile, error) {
	f, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create temp file for %s: %w", dst, err)
	}
	return &atomicFile{f: f, dst: dst}, nil
}

// commit syncs, closes and renames into place. The sync makes the rename
// publish data that is on disk: without it a crash can leave dst renamed but
// empty on some file systems.
func (a *atomicFile) commit() error {
	// CreateTemp makes 0600; data files are meant to be shared like ordinary ones.
	err := a.f.Chmod(0o644)
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.f.Name(), a.dst)
	}
	if err != nil {
		os.Remove(a.f.Name())
		a.done = true
		return fmt.Errorf("commit %s: %w", a.dst, err)
	}
	a.done = true
	return nil
}

// abort removes the temp file unless committed; safe to defer unconditionally.
func (a *atomicFile) abort() {
	if a.done {
		return
	}
	a.done = true
	// Best effort: abort runs on an error path that already reports the
	// cause, and a leftover temp name is hidden and unique.
	_ = a.f.Close()
	_ = os.Remove(a.f.Name())
}
