package ysb

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/saber-hx/saber-hx/sink"
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
// tuples; on success the caller owns f. Anything but a regular file is
// refused (its size cannot be checked up front): RunFiles reads those as
// streams.
func OpenEvents(path string) (f *os.File, tuples int64, err error) {
	f, tuples, stream, err := openEvents(path)
	if err == nil && stream {
		fi, serr := f.Stat()
		f.Close()
		if serr != nil {
			return nil, 0, fmt.Errorf("open events: %w", serr)
		}
		return nil, 0, fmt.Errorf("%s: not a regular file (%s), cannot check its size", path, fi.Mode().Type())
	}
	return f, tuples, err
}

// openEvents opens an events path: a regular file must hold a whole number
// of tuples (checked here, up front); a FIFO, a device or a socket is a
// stream (stream true, tuples -1), whose trailing partial tuple, if any, is
// found when it ends; a directory is refused.
func openEvents(path string) (f *os.File, tuples int64, stream bool, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, 0, false, fmt.Errorf("open events: %w", err) // *PathError names path
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, false, fmt.Errorf("open events: %w", err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, 0, false, fmt.Errorf("%s: is a directory, not an events file", path)
	}
	if !fi.Mode().IsRegular() {
		return f, -1, true, nil
	}
	size := fi.Size()
	if rem := size % TupleSize; rem != 0 {
		f.Close()
		return nil, 0, false, fmt.Errorf("%s: %d bytes is not a whole number of %d-byte tuples (%d trailing bytes)", path, size, TupleSize, rem)
	}
	return f, size / TupleSize, false, nil
}

// genChunk is the Fill/write unit of GenerateFiles: large enough to amortise
// the write syscall, small enough to stay in L2 between Fill and write.
const genChunk = 1 << 20

// GenerateFiles writes tuples generator tuples to eventsPath and the
// generator's campaigns table to campaignsPath, both through package sink:
// a regular file (or a new path) is written to a temporary file in its
// directory and renamed into place only after both were written
// completely, so an error or a cancelled ctx leaves no partial file and the
// old files untouched; only a failure of the final rename of the campaigns
// file can leave the new events file next to an old table. A FIFO, a
// device or a descriptor (--out /dev/stdout) is written through; then the
// campaigns table is committed first, before the first tuple is written, so
// that the reader at the other end of the stream finds the table in place
// when the tuples arrive (RunFiles waits for the first byte of a stream
// before it loads the table).
//
// The two paths must be different files (by device and inode, or by the
// path they resolve to when they do not exist yet): else an error matching
// sink.ErrUsage. A cancelled ctx ends the run with an error matching
// ctx.Err() (context.Canceled), nothing committed. Memory use is one chunk
// whatever the tuple count.
func GenerateFiles(ctx context.Context, eventsPath, campaignsPath string, tuples uint64, cfg GenConfig) error {
	g, err := NewGenerator(cfg)
	if err != nil {
		return err
	}
	if tuples > (1<<63-1)/TupleSize {
		return fmt.Errorf("generate %d tuples: the events file would pass 2^63 bytes", tuples)
	}
	if eventsPath == "" || campaignsPath == "" {
		return sink.Usagef("generate needs an events path and a campaigns path")
	}
	if same, err := sink.SameFile(eventsPath, campaignsPath); err == nil && same {
		return sink.Usagef("events %s and campaigns %s are the same file: one would overwrite the other", eventsPath, campaignsPath)
	}
	ev, err := sink.Create(eventsPath)
	if err != nil {
		return err
	}
	defer ev.Abort()
	camp, err := sink.Create(campaignsPath, eventsPath)
	if err != nil {
		return err
	}
	defer camp.Abort()
	if err := g.Campaigns().WriteCSV(camp); err != nil {
		return fmt.Errorf("%s: %w", campaignsPath, err)
	}
	if ev.WritesThrough() {
		if err := camp.Commit(); err != nil {
			return err
		}
	}

	buf := make([]byte, genChunk)
	for k := uint64(0); k < tuples; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("generate: interrupted after %d of %d tuples, nothing committed: %w", k, tuples, err)
		}
		n := min(tuples-k, genChunk/TupleSize)
		b := buf[:n*TupleSize]
		g.Fill(b, k)
		if _, err := ev.Write(b); err != nil {
			return fmt.Errorf("%s: write tuples from %d (byte offset %d): %w", eventsPath, k, k*TupleSize, err)
		}
		k += n
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("generate: interrupted, nothing committed: %w", err)
	}
	if err := ev.Commit(); err != nil {
		return err
	}
	if ev.WritesThrough() {
		return nil // camp committed above
	}
	return camp.Commit()
}
