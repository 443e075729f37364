package pipeline

import (
	"fmt"
	"io"

	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/strview"
)

// nexmarkFeed is a nexmark source's input: its table's events, generated
// as the source is read (inline), or replayed from a bundle generated
// before the run (Options.NexmarkBundle), so that a benchmark measures
// the engine rather than the generator.
type nexmarkFeed struct {
	table nexmark.Table
	cfg   nexmark.Config
	// stride is the source's tuple size: the generator's, or more where the
	// source has a processing-time column after the generator's bytes
	// (then the tuples are generated into wide and spread out).
	stride int
	wide   []byte
	// inline: the generator, and the arena of its events' own strings,
	// copied into the streams' heaps as the tuples are committed and reset
	// after each read.
	gen   *nexmark.Generator
	arena *strview.Arena
	// replay: the bundle (its strings stay put for its life, so that the
	// first stream takes the tuples as they are) and the tuples read.
	bundle *nexmark.Bundle
	k      uint64
}

func newNexmarkFeed(cfg nexmark.Config, t nexmark.Table, stride int, bundle *nexmark.Bundle) (*nexmarkFeed, error) {
	if stride < t.TupleSize() {
		return nil, fmt.Errorf("a %d-byte tuple is smaller than the %s table's %d bytes", stride, t, t.TupleSize())
	}
	f := &nexmarkFeed{table: t, cfg: cfg, stride: stride}
	if bundle != nil {
		bc := bundle.Config()
		bc.Events = cfg.Events
		if bc != cfg {
			return nil, fmt.Errorf("the bundle was generated with another configuration than the source's (%+v, the source's %+v)", bundle.Config(), cfg)
		}
		if cfg.Events > 0 {
			return nil, fmt.Errorf("a replayed bundle has no end: drop events.num, or bound the run by its duration")
		}
		f.bundle = bundle
		return f, nil
	}
	g, err := nexmark.New(cfg)
	if err != nil {
		return nil, err
	}
	f.gen, f.arena = g, strview.NewArena(0)
	return f, nil
}

// fill writes whole tuples into buf: n bytes, io.EOF where the sequence
// ended (events.num).
func (f *nexmarkFeed) fill(buf []byte) (int, error) {
	ts := f.table.TupleSize()
	if f.stride == ts {
		return f.generate(buf)
	}
	n := len(buf) / f.stride
	if cap(f.wide) < n*ts {
		f.wide = make([]byte, n*ts)
	}
	narrow := f.wide[:n*ts]
	got, err := f.generate(narrow)
	for i := range got / ts {
		copy(buf[i*f.stride:], narrow[i*ts:(i+1)*ts])
	}
	return got / ts * f.stride, err
}

// generate writes whole tuples of the generator's size into buf.
func (f *nexmarkFeed) generate(buf []byte) (int, error) {
	ts := f.table.TupleSize()
	if f.bundle != nil {
		n := len(buf) / ts
		f.bundle.FillAt(buf[:n*ts], f.table, f.k)
		f.k += uint64(n)
		return n * ts, nil
	}
	n := f.gen.FillTuples(buf, f.table, f.arena)
	f.k += uint64(n)
	if n == 0 || f.gen.Done() {
		return n * ts, io.EOF
	}
	return n * ts, nil
}

// committed is called once the tuples of the last fill are in every
// stream (their strings copied): the arena is free for the next.
func (f *nexmarkFeed) committed() {
	if f.arena != nil {
		f.arena.Reset()
	}
}

// copies reports whether the tuples' long strings must be copied into
// the streams' heaps (CommitCopy): an inline generator's arena is reused.
func (f *nexmarkFeed) copies() bool { return f.arena != nil }

// events is how many events of the sequence the source has covered, all
// tables counted, as Nexmark counts a run's events.
func (f *nexmarkFeed) events() uint64 {
	if f.bundle != nil {
		c := uint64(f.bundle.Count(f.table))
		if c == 0 {
			return 0
		}
		return f.k/c*uint64(f.bundle.Events()) + f.k%c*uint64(f.bundle.Events())/c
	}
	return uint64(f.gen.Position())
}

func (f *nexmarkFeed) close() {
	if f.arena != nil {
		f.arena.Free()
	}
}

// ConfigureNexmark changes the generator's configuration of every nexmark
// source of the program (the same change to each, so that their tables
// stay one sequence): a benchmark's event count or rate, a seed. It is an
// error where the result is not a valid configuration.
func (p *Program) ConfigureNexmark(change func(c *nexmark.Config)) error {
	for _, s := range p.prog.Sources {
		if s.Connector != "nexmark" {
			continue
		}
		change(&s.Nexmark)
		if err := s.Nexmark.Validate(); err != nil {
			return fmt.Errorf("source %s: %w", s.Name, err)
		}
	}
	return nil
}
