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
		return interruptedError{sig: s}
	}
	return nil
}

// exitSignalSummarized is exitSignal after a summary that says the run
// was interrupted and by what: the exit status says it again, no line
// does, so that a --json summary stays the last line of its stream.
func exitSignalSummarized(in *interrupt) error {
	if s := in.Signal(); s != 0 {
		return interruptedError{sig: s, summarized: true}
	}
	return nil
}

// interruptedError ends a command that a signal interrupted: exit status
// 128 + the signal's number, and a line on stderr unless the summary of
// what ran said so.
type interruptedError struct {
	sig        syscall.Signal
	summarized bool
}

func (e interruptedError) Error() string { return "interrupted by " + signals.Name(e.sig) }

func (e interruptedError) exitCode() int { return 128 + int(e.sig) }

// signalOf is the name of the signal that interrupted the run ("": none).
func signalOf(in *interrupt) string {
	if s := in.Signal(); s != 0 {
		return signals.Name(s)
	}
	return ""
}
