package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/metrics"
	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/sql"
)

// ErrUsage marks an error the caller can mend: a bad option, a missing or
// malformed input file, an output that may not be written. errors.Is(err,
// ErrUsage) tells it from a run that failed (the command line's exit
// status 2 against 1).
var ErrUsage = errors.New("pipeline: bad usage or input")

// usageError marks err as ErrUsage without changing its text.
type usageError struct{ err error }

func (e usageError) Error() string        { return e.err.Error() }
func (e usageError) Unwrap() error        { return e.err }
func (e usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Program is a compiled SQL program and what the caller attached to it:
// Go sources in place of the declared connectors, callbacks in place of
// the declared outputs, tables' contents. Attach before Open; a Program is
// opened once (Open).
type Program struct {
	name   string // the SQL file, or "-e" for text given inline
	prog   *sql.Program
	feeds  map[string]SourceFunc
	reads  map[string]io.Reader
	rows   map[string]RowsFunc
	tables map[string][]byte
	// opened: an Open got as far as opening the sources: its job owns the
	// attached readers and Go sources.
	opened atomic.Bool
}

// Compile compiles a SQL program (sql/doc.go has the dialect). name says
// where the text came from, in messages: a file's path, or "-e". An error
// in the text is a *sql.Error, with its position (Caret shows it).
func Compile(name, text string) (*Program, error) {
	return CompileEnv(name, text, os.LookupEnv)
}

// CompileEnv is Compile with env (os.LookupEnv's signature) as the
// environment that options' ${NAME} placeholders are read from.
func CompileEnv(name, text string, env func(string) (string, bool)) (*Program, error) {
	prog, err := sql.CompileEnv(text, env)
	if err != nil {
		return nil, err
	}
	return FromSQL(name, prog), nil
}

// FromSQL wraps a program compiled by package sql. Several Programs may
// wrap one *sql.Program, but only one Job over it may be open at a time:
// a Job loads the program's lookup tables into it (sql.Table), so a
// second one would change the rows the first one's joins read, or free
// them under it. Open refuses a second Job while another over the same
// *sql.Program is open (until its Close): compile the program again
// (sql.Compile, Compile) for jobs that run side by side.
func FromSQL(name string, prog *sql.Program) *Program {
	return &Program{name: name, prog: prog, feeds: map[string]SourceFunc{}, reads: map[string]io.Reader{},
		rows: map[string]RowsFunc{}, tables: map[string][]byte{}}
}

// SQL is the compiled program: its sources, tables and queries.
func (p *Program) SQL() *sql.Program { return p.prog }

// Name is where the program's text came from.
func (p *Program) Name() string { return p.name }

// SourceFunc feeds a source from Go: it writes the source's tuples to w
// (w.Columns has their layout) until its input ends (return nil) or ctx
// is cancelled (return nil: the run drains; w's Write and Append then
// return ErrSourceStopped, which may be returned as well). It runs on a
// goroutine of its own; Write blocks while the engine is full
// (back-pressure).
type SourceFunc func(ctx context.Context, w *TupleWriter) error

// AttachSource makes fn the source called name's input, in place of its
// connector (a source declared WITH (connector = 'go') must have one).
func (p *Program) AttachSource(name string, fn SourceFunc) error {
	if err := p.attachable(name); err != nil {
		return err
	}
	delete(p.reads, name)
	p.feeds[name] = fn
	return nil
}

// AttachReader makes r the source called name's input, in place of its
// file or standard input: records in the source's declared format (CSV,
// JSON lines or binary tuples), decoded as a file's would be.
//
// Where the run stops reading before r's end (Run's context cancelled,
// Options.Duration, an output's or another source's failure) a Read that
// waits is ended by r's read deadline (an *os.File on a pipe or a FIFO, a
// net.Conn: source.ReadDeadliner), else by closing r where it is an
// io.Closer (io.PipeReader); Close closes it too where a read may still
// wait. A reader that is neither (it may block for ever) must be ended by
// its caller, or Run waits for it.
func (p *Program) AttachReader(name string, r io.Reader) error {
	if err := p.attachable(name); err != nil {
		return err
	}
	delete(p.feeds, name)
	p.reads[name] = r
	return nil
}

func (p *Program) attachable(name string) error {
	if p.prog.Source(name) == nil {
		return fmt.Errorf("pipeline: the program has no source %q", name)
	}
	return p.notOpened()
}

// notOpened refuses what is attached after Open: the job has read what
// it runs with, and would not see it.
func (p *Program) notOpened() error {
	if p.opened.Load() {
		return fmt.Errorf("pipeline: program %s is opened: attach sources, outputs and tables before Open", p.name)
	}
	return nil
}

// OutputFiles are the files a run of the program writes: output
// (Options.Output: a plain SELECT's rows; "-" is standard output, not a
// file) and each file sink's path.
func (p *Program) OutputFiles(output string) []string {
	var files []string
	if output != "-" {
		files = append(files, output)
	}
	for _, q := range p.prog.Queries {
		if q.Sink != nil && q.Sink.Connector == "file" {
			files = append(files, q.Sink.Path)
		}
	}
	return files
}

// RowsFunc receives a query's output rows, a batch at a time, in the
// query's order (windows in window order). It is called by the engine's
// worker that merged them, one call at a time per query: it must not keep
// rows after it returns (copy what it needs). An error fails the run.
type RowsFunc func(rows *Rows) error

// OnRows sends the output of the query or view called name to fn, in
// place of its declared output (a CREATE SINK's, or standard output for a
// plain SELECT).
func (p *Program) OnRows(name string, fn RowsFunc) error {
	if p.prog.Query(name) == nil {
		return fmt.Errorf("pipeline: the program has no query %q", name)
	}
	if err := p.notOpened(); err != nil {
		return err
	}
	p.rows[name] = fn
	return nil
}

// SetTable gives the contents of the table called name, in its declared
// format, in place of its file.
func (p *Program) SetTable(name string, text []byte) error {
	if p.prog.Table(name) == nil {
		return fmt.Errorf("pipeline: the program has no table %q", name)
	}
	if err := p.notOpened(); err != nil {
		return err
	}
	p.tables[name] = text
	return nil
}

// TupleUnit is the least task size that holds whole tuples of every
// source: a task size for the engine should be a multiple of it.
func (p *Program) TupleUnit() int {
	unit := 1
	for _, s := range p.prog.Sources {
		unit = lcm(unit, s.Schema.TupleSize)
	}
	return unit
}

func lcm(a, b int) int {
	g, y := a, b
	for y != 0 {
		g, y = y, g%y
	}
	return a / g * b
}

// DefaultGeneratorDuration is how long a generator source produces where
// Options.Duration is 0.
const DefaultGeneratorDuration = 10 * time.Second

// DefaultCheckpointInterval is Options.CheckpointInterval's default.
const DefaultCheckpointInterval = 5 * time.Second

// Options say how a program runs.
type Options struct {
	// Engine is the engine's configuration (workers, task size, ...);
	// Engine.Started, if set, is still called.
	Engine engine.Config
	// Stdout receives the rows of the queries whose output is standard
	// output (a plain SELECT, where Output is "-" or ""). nil: discarded.
	Stdout io.Writer
	// Output is where a plain SELECT's rows go: "-" (or "") for Stdout,
	// else a file, written as package sink writes one (committed only
	// when the run succeeds).
	Output string
	// Log receives the run's messages, a line each: warnings, outages of
	// the servers written to, checkpoints. nil: discarded.
	Log io.Writer
	// Duration bounds how long the unbounded sources are read: generators
	// (0: DefaultGeneratorDuration) and Kafka topics (0: until the
	// context of Run ends). Files and readers are read to their end, or
	// for Duration where it is set.
	Duration time.Duration
	// StopAtEnd reads each Kafka partition to the end it had at the
	// start, then drains and ends (a bounded run over a backlog).
	StopAtEnd bool
	// CheckpointDir, where set, checkpoints the run there every
	// CheckpointInterval (0: DefaultCheckpointInterval) and restores the
	// newest valid checkpoint on Open (docs/operations.md): the program
	// needs one Kafka source and its outputs in Kafka, Redis or files.
	CheckpointDir      string
	CheckpointInterval time.Duration
	// Instance and Instances share the Kafka sources' partitions among
	// processes statically: this one reads the partitions p with
	// p mod Instances = Instance. 0 and 0 (or 1): all of them.
	Instance, Instances int
	// SinkRetryTimeout is how long an output retries a write that fails
	// because its server is unreachable before the run fails (0:
	// DefaultSinkRetryTimeout; negative: no retry).
	SinkRetryTimeout time.Duration
	// Metrics, where set, gets the run's engine, sources and outputs
	// (package metrics reads them at scrape time).
	Metrics *metrics.Registry
	// NexmarkBundle, where set, is replayed by the program's nexmark
	// sources (each its own table, pass after pass with later times and
	// ids) instead of generating their events as they are read; its
	// configuration must be theirs. The caller frees it after Close.
	NexmarkBundle *nexmark.Bundle
	// Validate keeps every tuple the sources feed and every query's
	// output, and checks each query against the reference evaluator after
	// the run (Summary.Validated, QuerySummary.Mismatch). Memory grows
	// with the input: bound it (a file, events.num, a short Duration).
	Validate bool
}

// Summary is what a run did.
type Summary struct {
	File    string          `json:"file"`
	Seconds float64         `json:"seconds"`
	Tuples  uint64          `json:"tuples"` // fed by the sources
	Queries []QuerySummary  `json:"queries"`
	Sources []SourceSummary `json:"sources"`
	// Interrupted: the context of Run ended the run before its sources
	// did; what was read was drained and is in the outputs.
	Interrupted bool `json:"interrupted"`
	// Checkpoints, with Options.CheckpointDir.
	Checkpoints *CheckpointSummary `json:"checkpoints,omitempty"`
	// SerialFraction is the program's: all its queries' serial time
	// against all their worker time (QuerySummary's seconds added up).
	// A program whose queries' serial stages run one after another
	// cannot speed up more than 1/SerialFraction with any number of
	// cores; where they overlap (each query's is its own) it may, up to
	// the worker time against its largest serial time.
	SerialFraction float64 `json:"serial_fraction"`
	// Validated, with Options.Validate: every query's output is the
	// reference evaluator's (QuerySummary.Mismatch says where not).
	Validated *bool `json:"validated,omitempty"`
	// Stats are the engine's counters per query, in program order.
	Stats []engine.Stats `json:"-"`
}

// QuerySummary is one query's counters: its input tuples are each
// filtered, unmatched (a join), late or counted.
type QuerySummary struct {
	Name      string `json:"name"`
	Tuples    uint64 `json:"tuples"`
	Windows   uint64 `json:"windows"`
	Rows      uint64 `json:"rows"`
	Filtered  uint64 `json:"filtered_tuples"`
	Unmatched uint64 `json:"unmatched_tuples"`
	Late      uint64 `json:"late_tuples"`
	Counted   uint64 `json:"counted_tuples"`
	Output    string `json:"output,omitempty"` // where its rows went
	// SerialFraction is the share of the query's worker time spent where
	// no other worker can progress on it (engine.Stats.SerialFraction).
	SerialFraction float64 `json:"serial_fraction"`
	// SerialSeconds and WorkerSeconds are the two times of that ratio
	// (engine.Stats.SerialTime, WorkerTime), so that a program's parts
	// can be added up.
	SerialSeconds float64 `json:"serial_s"`
	WorkerSeconds float64 `json:"worker_s"`
	// Mismatch is, with Options.Validate, how the query's output differs
	// from the reference evaluator's ("" where it does not).
	Mismatch string `json:"mismatch,omitempty"`
}

// SourceSummary is a source's records: fed, and malformed (skipped with
// on_error = 'skip'), so that the queries' counters plus these add up.
type SourceSummary struct {
	Name      string `json:"name"`
	Tuples    uint64 `json:"tuples"`
	Malformed uint64 `json:"malformed_records"`
	// Events is a nexmark source's events of the sequence covered, every
	// table's counted (as Nexmark counts a run's events; Tuples are the
	// source's own table's).
	Events uint64 `json:"events,omitempty"`
}
