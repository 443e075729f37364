// Package signals is a command's answer to SIGINT and SIGTERM: the first
// signal cancels a context (the run stops its ingestion and drains what
// is in flight), and watching stops at that signal, so that a second one
// ends the process at once with the default action: Ctrl-C is always
// answered, even by a drain that hangs.
package signals

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// Watch watches SIGINT and SIGTERM until Stop.
type Watch struct {
	ctx    context.Context
	cancel context.CancelFunc
	sig    atomic.Int32 // the first signal's number; 0: none yet
	c      chan os.Signal
	pipe   chan os.Signal // SIGPIPE's, never read: its delivery is what counts
	done   chan struct{}
}

// Start starts watching: at the first signal, first is called with it
// (on the watch's goroutine), then the context is cancelled.
func Start(first func(syscall.Signal)) *Watch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watch{ctx: ctx, cancel: cancel, c: make(chan os.Signal, 1), pipe: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(w.c, os.Interrupt, syscall.SIGTERM)
	// A broken pipe on standard output or error is a write's EPIPE while
	// the watch runs, not the process's end: the run fails as at any
	// output's failure (its files aborted), where SIGPIPE killed it
	// and left them behind (pipeline.ErrStdoutClosed).
	signal.Notify(w.pipe, syscall.SIGPIPE)
	go func() {
		select {
		case s := <-w.c:
			signal.Stop(w.c)
			sig := s.(syscall.Signal)
			w.sig.Store(int32(sig))
			first(sig)
			cancel()
		case <-w.done:
		}
	}()
	return w
}

// Context is cancelled at the first signal (or by Stop).
func (w *Watch) Context() context.Context { return w.ctx }

// Stop stops watching and releases the goroutine.
func (w *Watch) Stop() {
	signal.Stop(w.c)
	signal.Stop(w.pipe)
	close(w.done)
	w.cancel()
}

// Signal is the first signal, or 0 while none arrived.
func (w *Watch) Signal() syscall.Signal { return syscall.Signal(w.sig.Load()) }

// Name is s's name: SIGINT, SIGTERM, or as syscall names it.
func Name(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// Interrupted ends a command that a signal interrupted: its exit status
// is 128 + the signal's number (130, 143). Summarized says the summary
// of what ran already reported the signal, so that nothing needs to be
// printed after it (a --json summary stays its stream's last line).
type Interrupted struct {
	Signal     syscall.Signal
	Summarized bool
}

func (e Interrupted) Error() string { return "interrupted by " + Name(e.Signal) }

// ExitCode is 128 + the signal's number.
func (e Interrupted) ExitCode() int { return 128 + int(e.Signal) }

// Err is nil while no signal arrived, else an Interrupted (summarized:
// the command printed a summary that says so).
func (w *Watch) Err(summarized bool) error {
	if s := w.Signal(); s != 0 {
		return Interrupted{Signal: s, Summarized: summarized}
	}
	return nil
}

// Name is the first signal's name, "" while none arrived.
func (w *Watch) Name() string {
	if s := w.Signal(); s != 0 {
		return Name(s)
	}
	return ""
}
