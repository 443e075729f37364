package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// interrupt is a command's answer to SIGINT and SIGTERM. The first signal
// cancels the run's context: ingestion stops, what is in flight drains, the
// summary of what ran is printed marked "interrupted", and the command exits
// with 128 + the signal's number (130, 143). Watching stops at that first
// signal, so a second one ends the process at once with the default action:
// Ctrl-C is always answered, even by a drain that hangs.
type interrupt struct {
	ctx    context.Context
	cancel context.CancelFunc
	sig    atomic.Int32 // the first signal's number; 0: none yet
	c      chan os.Signal
	done   chan struct{}
}

// watchSignals starts watching; stop ends it (defer it).
func watchSignals(stderr io.Writer) *interrupt {
	ctx, cancel := context.WithCancel(context.Background())
	in := &interrupt{ctx: ctx, cancel: cancel, c: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(in.c, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-in.c:
			signal.Stop(in.c)
			sig := s.(syscall.Signal)
			in.sig.Store(int32(sig))
			fmt.Fprintf(stderr, "saber-hx: %s: stopping ingestion and draining what is in flight (send it again to quit at once)\n", signalName(sig))
			cancel()
		case <-in.done:
		}
	}()
	return in
}

// stop stops watching and releases the goroutine.
func (in *interrupt) stop() {
	signal.Stop(in.c)
	close(in.done)
	in.cancel()
}

// interrupted reports whether a signal arrived.
func (in *interrupt) interrupted() bool { return in.sig.Load() != 0 }

// err is nil without a signal, else the interruptedError that makes the
// command exit with 128 + its number.
func (in *interrupt) err() error {
	if s := in.sig.Load(); s != 0 {
		return interruptedError{syscall.Signal(s)}
	}
	return nil
}

// interruptedError ends a command that a signal interrupted after it
// printed the summary of what ran: exit status 128 + the signal's number.
type interruptedError struct{ sig syscall.Signal }

func (e interruptedError) Error() string { return "interrupted by " + signalName(e.sig) }

func (e interruptedError) exitCode() int { return 128 + int(e.sig) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// signalOf is the name of the signal that interrupted the run ("": none).
func signalOf(in *interrupt) string {
	if ie, ok := in.err().(interruptedError); ok {
		return signalName(ie.sig)
	}
	return ""
}
