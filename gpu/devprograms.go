package gpu

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// devPrograms is the part of a Device that both devices share: the
// programs and join programs it compiled and has not seen closed, so that
// its Close closes them, and whether it is closed. Safe for concurrent use.
type devPrograms struct {
	mu     sync.Mutex
	closed bool
	open   map[io.Closer]bool
}

// openable is what a device compiles: a *program or a *joinHost, whose
// Close calls the onClose it was given.
type openable interface {
	io.Closer
	setOnClose(func())
}

func (pr *program) setOnClose(f func()) { pr.onClose = f }
func (h *joinHost) setOnClose(f func()) { h.onClose = f }

// compileOpen runs build with ps locked, unless device name is closed, and
// keeps what it builds until its Close. The lock keeps a concurrent Close
// from releasing the device while build uses it.
func compileOpen[T openable](ps *devPrograms, name string, build func() (T, error)) (T, error) {
	var none T
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return none, fmt.Errorf("gpu: %s: device is closed", name)
	}
	c, err := build()
	if err != nil {
		return none, err
	}
	if ps.open == nil {
		ps.open = map[io.Closer]bool{}
	}
	ps.open[c] = true
	c.setOnClose(func() {
		ps.mu.Lock()
		delete(ps.open, c)
		ps.mu.Unlock()
	})
	return c, nil
}

// close marks the device closed and closes the programs still open. first
// is false if the device was closed already (then there is nothing to
// close).
func (ps *devPrograms) close() (first bool, err error) {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return false, nil
	}
	ps.closed = true
	open := make([]io.Closer, 0, len(ps.open))
	for c := range ps.open {
		open = append(open, c)
	}
	ps.mu.Unlock()
	var errs []error
	for _, c := range open {
		errs = append(errs, c.Close())
	}
	return true, errors.Join(errs...)
}
