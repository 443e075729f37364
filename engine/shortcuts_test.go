package engine

import "github.com/saber-hx/saber-hx/query"

// The first-stream shortcuts of the engine's own tests (not of its API:
// a caller uses Start, Stream(i) and CloseAll).

// New starts an engine for one query whose windows go to sink.
func New(cfg Config, q *query.Query, sink Sink) (*Engine, error) {
	return Start(cfg, []Spec{{Query: q, Windows: sink}})
}

// Buffer, Commit and Write act on the first spec's stream.
func (e *Engine) Buffer() ([]byte, error) { return e.Stream(0).Buffer() }
func (e *Engine) Commit(n int) error      { return e.Stream(0).Commit(n) }
func (e *Engine) Write(p []byte) error    { return e.Stream(0).Write(p) }

// Stats returns the first spec's counters.
func (e *Engine) Stats() Stats { return e.Stream(0).Stats() }

// Close is CloseAll, returning the first spec's counters.
func (e *Engine) Close() (Stats, error) {
	st, err := e.CloseAll()
	return st[0], err
}
