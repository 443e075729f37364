package ysb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/sink"
	"github.com/saber-hx/saber-hx/source"
)

// RunReader runs the YSB query over the tuples read from r and returns the
// result rows, in window order then campaign order. r is read as a stream:
// a trailing partial tuple at its end is an *InputError naming the trailing
// byte count and its byte offset.
func RunReader(cfg engine.Config, r io.Reader, c *Campaigns, windowMs int64) ([]Row, engine.Stats, error) {
	rows, st, _, err := runReader(context.Background(), cfg, r, c, windowMs)
	return rows, st, err
}

// runReader is RunReader stopped by ctx: on cancellation it stops reading
// (a Read blocked on a reader that has SetReadDeadline is ended through
// it; any other reader is left to return its Read), closes the engine,
// which drains the tasks in flight and emits the open windows, and returns
// interrupted true, the rows of what ran (not the whole input's) and the
// stats of what ran.
func runReader(ctx context.Context, cfg engine.Config, r io.Reader, c *Campaigns, windowMs int64) (rows []Row, st engine.Stats, interrupted bool, err error) {
	emit := func(w *engine.Window) error {
		for i := range w.Rows() {
			var id UUID
			copy(id[:], w.Key(i))
			rows = append(rows, Row{WindowStart: w.Start, CampaignID: id, Count: w.Agg(i, AggCount), MaxEventTime: w.Agg(i, AggMaxEventTime)})
		}
		return nil
	}
	eng, err := engine.Start(cfg, []engine.Spec{{Query: Query(c, windowMs), Windows: emit}})
	if err != nil {
		return nil, engine.Stats{}, false, err
	}
	if d, ok := deadlinerOf(r); ok {
		stop := context.AfterFunc(ctx, func() { _ = d.SetReadDeadline(time.Now()) })
		defer stop()
	}
	// The reader runs on a goroutine of its own (Produce), so that it can be
	// pinned (Config.PinIngest) and its thread retired afterwards.
	var stopped bool
	rerr := <-eng.Produce(func() (err error) {
		stopped, err = ingest(ctx, eng.Stream(0), r)
		return err
	})
	stats, err := eng.CloseAll()
	st = stats[0]
	if rerr != nil {
		return nil, st, false, rerr
	}
	if err != nil {
		return nil, st, stopped, err
	}
	return rows, st, stopped, nil
}

// deadlinerOf returns the reader under r whose deadline ends a blocked Read.
func deadlinerOf(r io.Reader) (source.ReadDeadliner, bool) {
	if p, ok := r.(*peekReader); ok {
		r = p.under
	}
	d, ok := r.(source.ReadDeadliner)
	return d, ok
}

// ingest reads r into the stream's ring until EOF (interrupted false) or
// until ctx is cancelled (interrupted true: the whole tuples read so far
// are committed, the rest dropped). At EOF, a trailing partial tuple is an
// *InputError.
func ingest(ctx context.Context, s *engine.Stream, r io.Reader) (interrupted bool, err error) {
	var offset int64
	for {
		if ctx.Err() != nil {
			return true, nil
		}
		b, err := s.Buffer()
		if err != nil {
			return false, err
		}
		n, rerr := io.ReadFull(r, b)
		eof := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !eof && ctx.Err() != nil {
			// The read was ended by the cancellation (a deadline): keep the
			// whole tuples read.
			n -= n % TupleSize
			return true, s.Commit(n)
		}
		if rem := n % TupleSize; eof && rem != 0 {
			if ctx.Err() != nil {
				// The writer was stopped by the same interrupt (a shell
				// pipeline's SIGINT) in the middle of a tuple.
				return true, s.Commit(n - rem)
			}
			return false, &InputError{fmt.Errorf("%d trailing bytes at byte offset %d: the stream does not end on a whole %d-byte tuple", rem, offset+int64(n-rem), TupleSize)}
		}
		offset += int64(n)
		if err := s.Commit(n); err != nil {
			return false, err
		}
		if eof {
			return false, nil
		}
		if rerr != nil {
			return false, fmt.Errorf("read events at byte %d: %w", offset, rerr)
		}
	}
}

// peekReader is a stream whose first bytes were read ahead (bufio), with
// the reader under it kept for its deadline.
type peekReader struct {
	*bufio.Reader
	under io.Reader
}

// FileResult summarises a file-mode run.
type FileResult struct {
	Stats   engine.Stats // of what ran: all the input, or up to the interruption
	Seconds float64
	// Rows are the results, in window order then campaign order; nil when
	// Interrupted (the rows of part of the input are not the results).
	Rows []Row
	// Interrupted: ctx was cancelled before the run completed (or before
	// the output was committed). The engine was drained and closed, Stats
	// count what ran, nothing was committed (the output's old content, if
	// any, is untouched) and the error is nil unless something else failed.
	Interrupted bool
}

// FileConfig names the inputs and the output of a file-mode run.
type FileConfig struct {
	// Events is the events file: a regular file, whose size is checked up
	// front (a whole number of tuples); a FIFO or a device, read as a
	// stream; or "-", Stdin read as a stream. A stream that does not end on
	// a whole tuple is refused when it ends (an *InputError naming the
	// trailing byte count and its byte offset).
	Events string
	// Campaigns is the campaigns CSV.
	Campaigns string
	// Output is the results CSV, written through package sink (see
	// sink.Create) only when the whole run succeeded and was not
	// interrupted; "" for none (the rows are returned in FileResult.Rows
	// either way).
	Output string
	// Stdin is read when Events is "-"; nil means os.Stdin. An *os.File
	// (os.Stdin redirected from a file) is compared with Output by inode
	// like the named inputs. A cancellation ends a Read blocked on a pipe
	// or a FIFO (os.Stdin inherited in blocking mode is read through a
	// non-blocking duplicate, put back in blocking mode at the end), or on
	// any reader with SetReadDeadline; on a terminal or another reader, the
	// run stops when its Read returns.
	Stdin io.Reader
}

// InputError marks a problem with the inputs or the output path the user
// named (missing, unreadable, malformed, an output that is an input), as
// opposed to a failure of the run.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// fdPath names the file f is open on, for comparing it with the output by
// inode: /proc/self/fd/N, found without f.Fd (which would put f in blocking
// mode, where a read deadline no longer ends a blocked Read).
func fdPath(f *os.File) string {
	rc, err := f.SyscallConn()
	if err != nil {
		return ""
	}
	var path string
	if err := rc.Control(func(fd uintptr) { path = fmt.Sprintf("/proc/self/fd/%d", fd) }); err != nil {
		return ""
	}
	return path
}

// RunFiles runs YSB over an events file (or stream) and a campaigns file,
// in this order: it opens the output first (so that a missing or read-only
// directory, or an output that is the same file as an input, is reported
// before any work), then the events, then waits for a stream's first byte
// (so that a generator writing the stream, which commits its campaigns
// table before its first tuple, has written it), then loads the campaigns,
// then streams the events through the engine, then writes and commits the
// output.
//
// Errors: an *InputError for the inputs and the output path (exit status
// 2 in the CLI; a sink.ErrUsage under it for the output's); anything else
// is a failure of the run. On ctx cancellation the run stops ingesting,
// drains what is in flight, commits nothing and returns FileResult with
// Interrupted set, the stats of what ran and a nil error (unless something
// else failed too).
func RunFiles(ctx context.Context, cfg engine.Config, fc FileConfig) (FileResult, error) {
	if fc.Events == "" || fc.Campaigns == "" {
		return FileResult{}, &InputError{errors.New("file mode needs an events file (- for standard input) and a campaigns file")}
	}
	stdin, name := fc.Stdin, fc.Events
	inputs := []string{fc.Campaigns, fc.Events}
	if fc.Events == "-" {
		name, inputs = "standard input", inputs[:1]
		if stdin == nil {
			stdin = os.Stdin
		}
		if f, ok := stdin.(*os.File); ok {
			inputs = append(inputs, fdPath(f))
		}
	}
	var out *sink.File
	if fc.Output != "" {
		f, err := sink.Create(fc.Output, inputs...)
		if err != nil {
			if errors.Is(err, sink.ErrUsage) {
				err = &InputError{err}
			}
			return FileResult{}, err
		}
		out = f
		defer out.Abort()
	}

	var r io.Reader = stdin
	if fc.Events == "-" {
		pr, restore := source.Pollable(stdin)
		defer restore()
		r = pr
	}
	stream := true
	if fc.Events != "-" {
		f, _, isStream, err := openEvents(fc.Events)
		if err != nil {
			return FileResult{}, &InputError{err}
		}
		defer f.Close()
		r, stream = f, isStream
	}
	if stream {
		p := &peekReader{Reader: bufio.NewReaderSize(r, 1<<16), under: r}
		if d, ok := r.(source.ReadDeadliner); ok {
			stop := context.AfterFunc(ctx, func() { _ = d.SetReadDeadline(time.Now()) })
			_, err := p.Peek(1)
			if !stop() {
				// The deadline may have been set after Peek returned: clear it
				// (the run is interrupted anyway, ingest returns at once).
				_ = d.SetReadDeadline(time.Time{})
			}
			if err != nil && err != io.EOF && ctx.Err() == nil {
				return FileResult{}, &InputError{fmt.Errorf("read events from %s: %w", name, err)}
			}
		} else if _, err := p.Peek(1); err != nil && err != io.EOF {
			return FileResult{}, &InputError{fmt.Errorf("read events from %s: %w", name, err)}
		}
		r = p
	}
	if ctx.Err() != nil {
		return FileResult{Interrupted: true}, nil
	}
	c, err := LoadCampaigns(fc.Campaigns)
	if err != nil {
		return FileResult{}, &InputError{err}
	}

	start := time.Now()
	rows, st, interrupted, err := runReader(ctx, cfg, r, c, WindowMs)
	res := FileResult{Stats: st, Seconds: time.Since(start).Seconds(), Interrupted: interrupted || ctx.Err() != nil}
	if err != nil {
		return res, fmt.Errorf("%s: %w", name, err)
	}
	if res.Interrupted {
		return res, nil // out aborted by the defer: nothing committed
	}
	if out != nil {
		if err := WriteResultsCSV(out, rows); err != nil {
			return res, fmt.Errorf("%s: %w", fc.Output, err)
		}
		if ctx.Err() != nil {
			res.Interrupted = true
			return res, nil
		}
		if err := out.Commit(); err != nil {
			return res, err
		}
	}
	res.Rows = rows
	return res, nil
}
