// Command saber-hx is the command line of the saber-hx stream processing
// engine: the YSB benchmark and file mode, SABER's workloads, the topology.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/internal/signals"
	"github.com/saber-hx/saber-hx/nexmark/bench"
	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/sink"
	"github.com/saber-hx/saber-hx/workloads"
)

// usageError marks an error of the command line or of its input files: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func main() {
	os.Exit(run(os.Args[1:], sink.StdoutWriter(os.Stdout), os.Stderr))
}

const help = `saber-hx: windowed stream processing on one server.

Usage:
  saber-hx ysb [flags]                 run the Yahoo Streaming Benchmark in memory (validated)
  saber-hx ysb --input F --campaigns C [--output O]
                                       run YSB over an events file, write results CSV
  saber-hx ysb generate --tuples N --out F --campaigns C
                                       write an events file and its campaigns table
  saber-hx ysb setup|produce|check     the original YSB pipeline's steps over Kafka and Redis (ysb --source kafka runs it)
  saber-hx bench WORKLOAD[,WORKLOAD...] [flags]
                                       run SABER's workloads (several at once share the workers);
                                       saber-hx bench --list names them
  saber-hx nexmark QUERY [flags]       run a Nexmark query of examples/nexmark (q0, q1, ...; validated with --validate)
  saber-hx nexmark generate --events N (--out DIR | --brokers B)
                                       write Nexmark's events as JSON lines to files or Kafka topics
  saber-hx run FILE.sql [flags]        run the queries of a SQL file (or -e 'SQL') over your own data
  saber-hx explain FILE.sql            print each query's plan: layout, window, kernel, GPU support
  saber-hx topology [--json]           print NUMA nodes, CPUs, caches and GPUs
  saber-hx help [COMMAND]              this text, or COMMAND's flags

Run "saber-hx COMMAND -h" (ysb, ysb generate|setup|produce|check, bench, nexmark, nexmark generate, run, explain, topology)
for every flag and its default.
Exit status: 0 success, 1 run failure (such as a validation mismatch), 2 bad usage or bad input,
130 or 143 interrupted by SIGINT or SIGTERM (ingestion stopped, what was in flight drained,
the summary of what ran printed and marked interrupted; a second signal quits at once),
141 quietly where the reader of the rows on stdout went away.
`

// run is main without the process: testable.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, help)
		return 2
	}
	var err error
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			return run(append(args[1:], "-h"), stdout, stderr) // help COMMAND
		}
		fmt.Fprint(stdout, help)
		return 0
	case "bench":
		err = runBench(args[1:], stdout, stderr)
	case "ysb":
		if len(args) > 1 && args[1] == "generate" {
			err = runGenerate(args[2:], stdout, stderr)
		} else {
			err = runYSB(args[1:], stdout, stderr)
		}
	case "topology":
		err = runTopology(args[1:], stdout, stderr)
	case "run":
		err = runRun(args[1:], stdout, stderr)
	case "explain":
		err = runExplain(args[1:], stdout, stderr)
	case "nexmark":
		err = runNexmark(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "saber-hx: unknown command %q\n\n%s", args[0], help)
		return 2
	}
	return exitCode(err, stderr)
}

// exitCode reports err on stderr and maps it to the exit status: 0
// success, 1 a failed run, 2 bad usage or bad input, 128 + N a run that
// signal N interrupted (130 SIGINT, 143 SIGTERM) after its summary.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, errHelp) {
		return 0
	} else if errors.Is(err, pipeline.ErrStdoutClosed) {
		return 128 + int(syscall.SIGPIPE) // quiet, as a pipeline's writer
	}
	// The interruption alone, after a summary that says it: no line
	// (joined with another error, both are printed).
	if ie, ok := err.(signals.Interrupted); !ok || !ie.Summarized {
		fmt.Fprintf(stderr, "saber-hx: %v\n", err)
	}
	var ie signals.Interrupted
	if errors.As(err, &ie) {
		return ie.ExitCode()
	}
	var ue usageError
	var oe *security.OptionError
	if errors.As(err, &ue) || errors.As(err, &oe) || errors.Is(err, engine.ErrConfig) || errors.Is(err, engine.ErrInput) ||
		errors.Is(err, sink.ErrUsage) || errors.Is(err, pipeline.ErrUsage) || errors.Is(err, workloads.ErrUsage) || errors.Is(err, bench.ErrUsage) {
		return 2
	}
	return 1
}
