package engine

import (
	"fmt"
	"strings"

	"github.com/saber-hx/saber-hx/cpu"
)

// Ingest says who performs the ingestion copy of a stream whose input
// stays addressable (a replayed bundle, a generator: Stream.SetFill): the
// producer, into the ring, or the worker that runs each task, into a buffer
// of its own, or both. saber-hx ysb and saber-hx bench take it as --ingest.
type Ingest string

const (
	IngestAuto     Ingest = ""         // see Ingest.Resolve
	IngestProducer Ingest = "producer" // one producer goroutine copies every task (Stream.Commit)
	IngestWorkers  Ingest = "workers"  // each worker copies the task it runs, into its own buffer (Stream.CommitUnfilled)
	// IngestShared: the producer copies a task while the workers have
	// tasks queued behind the ones they run, and leaves it to them
	// otherwise: the copy is shared between them in whatever proportion
	// keeps both busy.
	IngestShared Ingest = "shared"
)

// Ingests lists the valid values of --ingest, "auto" for IngestAuto.
var Ingests = []string{"auto", string(IngestProducer), string(IngestWorkers), string(IngestShared)}

// ParseIngest parses a --ingest value.
func ParseIngest(s string) (Ingest, error) {
	switch s {
	case "auto", "":
		return IngestAuto, nil
	case string(IngestProducer), string(IngestWorkers), string(IngestShared):
		return Ingest(s), nil
	}
	return "", fmt.Errorf("ingest %q: want one of %s", s, strings.Join(Ingests, ", "))
}

// Resolve turns IngestAuto into the mode for cfg: shared in gpu mode and
// for a single CPU worker with a CPU to spare, where the producer's copy
// doubles the CPUs at work (gpu mode on an H200: YSB 1.6x the producer
// alone, whose one goroutine's copy bound it; docs/gpu.md); else workers.
// With more workers the producer's CPU adds little and its copy costs
// them: they read the task from the ring, out of another core's cache,
// instead of copying it into their own buffer (16 cores: workers 1.4-1.6x
// shared for YSB at 4, 8 and 15 workers, equal or better for sg2 and
// lrb1; docs/performance.md).
func (i Ingest) Resolve(cfg Config) Ingest {
	cfg = cfg.Defaults()
	switch {
	case i != IngestAuto:
		return i
	case cfg.GPUOnly, cfg.Workers == 1 && len(cpu.AllowedCPUs()) > 1:
		return IngestShared
	}
	return IngestWorkers
}

// LeaveToWorkers says whether the producer leaves the next task of st to
// the workers (CommitUnfilled). Shared: when no task is queued behind the
// ones they run, for they would wait for the producer's copy; while they
// have work, the producer copies.
func (i Ingest) LeaveToWorkers(st *Stream, workers int) bool {
	return i == IngestWorkers || (i == IngestShared && st.InFlight() <= workers)
}
