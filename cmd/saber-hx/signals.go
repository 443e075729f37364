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
