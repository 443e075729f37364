package main

import (
	"fmt"
	"io"
	"syscall"

	"github.com/saber-hx/saber-hx/internal/signals"
)

// interrupt is a command's answer to SIGINT and SIGTERM (package
// internal/signals). The first signal cancels the run's context:
// ingestion stops, what is in flight drains, the summary of what ran is
// printed marked "interrupted", and the command exits with 128 + the
// signal's number (130, 143). A second one ends the process at once.
type interrupt = signals.Watch

// watchSignals starts watching; Stop ends it (defer it).
func watchSignals(stderr io.Writer) *interrupt {
	return signals.Start(func(sig syscall.Signal) {
		fmt.Fprintf(stderr, "saber-hx: %s: stopping ingestion and draining what is in flight (send it again to quit at once)\n", signals.Name(sig))
	})
}

// exitSignal is nil without a signal, else the interruptedError that
// makes the command exit with 128 + its number.
func exitSignal(in *interrupt) error {
	if s := in.Signal(); s != 0 {
		return interruptedError{s}
	}
	return nil
}

// interruptedError ends a command that a signal interrupted after it
// printed the summary of what ran: exit status 128 + the signal's number.
type interruptedError struct{ sig syscall.Signal }

func (e interruptedError) Error() string { return "interrupted by " + signals.Name(e.sig) }

func (e interruptedError) exitCode() int { return 128 + int(e.sig) }

// signalOf is the name of the signal that interrupted the run ("": none).
func signalOf(in *interrupt) string {
	if s := in.Signal(); s != 0 {
		return signals.Name(s)
	}
	return ""
}
