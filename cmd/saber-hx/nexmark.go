package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/nexmark/bench"
)

// The runtime of nexmark (the bundle, the runs, validation, generate) is
// package nexmark/bench's; here are its flags and its summary.

const nexmarkGenSynopsis = "  saber-hx nexmark generate --events N (--out DIR | --brokers B) [flags]"

// nexmarkFlags registers the generator's flags and Kafka's, the run's and generate's.
func nexmarkFlags(fs *flag.FlagSet, nc *nexmark.Config, prefix *string) (brokers *string) {
	*nc = nexmark.DefaultConfig()
	fs.Int64Var(&nc.EventRate, "rate", nc.EventRate, "events per second of event time (Nexmark's first-event.rate, the connector's default): "+
		"how many events a window of event time holds; the project's published V2 figures ran 100000 (conf/nexmark_v2.yaml's tps), build/bench-nexmark.sh passes that")
	fs.Uint64Var(&nc.Seed, "seed", nc.Seed, "the sequence's seed")
	fs.StringVar(prefix, "topic-prefix", "nexmark-", "Kafka: the topics are PREFIXperson, PREFIXauction, PREFIXbid (PREFIXevents: generate --nested)")
	return fs.String("brokers", "", "Kafka: the brokers, host:port[,host:port...]")
}

func runNexmark(args []string, stdout, stderr io.Writer) (err error) {
	if len(args) > 0 && args[0] == "generate" {
		return runNexmarkGenerate(args[1:], stdout, stderr)
	}
	fs := newFlagSet("nexmark", "  saber-hx nexmark QUERY [flags]   (QUERY: "+strings.Join(bench.Queries(), ", ")+"; examples/nexmark)\n"+nexmarkGenSynopsis, stdout)
	var ef engineFlags
	c := bench.Config{Log: stderr}
	ef.register(fs)
	fs.Lookup("task-size").DefValue = "whole tuples of the query's sources, the most that fit 1048576 B" // not given: TaskSize 0 below
	brokers := nexmarkFlags(fs, &c.Nexmark, &c.TopicPrefix)
	fs.DurationVar(&c.Warmup, "warmup", bench.DefaultWarmup, "replayed run before the measured interval (0: none)")
	fs.DurationVar(&c.Duration, "duration", bench.DefaultDuration, "the measured interval (> 0)")
	fs.IntVar(&c.Events, "events", bench.DefaultEvents, "events generated into the bundle that the run replays (with later times and ids each pass; > 0)")
	fs.BoolVar(&c.Inline, "inline", false, "generate the events as the sources read them (the generator in the loop), no bundle; "+
		"like the bundle, only the tables the query reads: no mode generates the whole mix (docs/nexmark.md, \"What a run counts\")")
	fs.BoolVar(&c.Validate, "validate", false, "first run the query over --validate-events events and check every query against the reference evaluator")
	fs.Int64Var(&c.ValidateEvents, "validate-events", bench.DefaultValidateEvents, "events of the validation run (at --rate, or lower where they would span less than 40 s of event time: windows must turn over; > 0)")
	fs.StringVar(&c.Source, "source", "nexmark", "nexmark (the generator), json (--dir's person.json, auction.json, bid.json from generate) or kafka (--brokers' topics, read to their end)")
	fs.StringVar(&c.Dir, "dir", "", "source json: the directory of generate's files")
	fs.StringVar(&c.NexmarkDir, "nexmark-dir", "", "q10: ${NEXMARK_DIR}, kept after the run: the partitions go under DIR/data/output/SUBMIT_TIME/bid/ (SUBMIT_TIME: the run's start in ms since the epoch); default a temporary directory, removed after the run")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object on a line of stdout, not as text (interrupted, and signal, when SIGINT or SIGTERM stopped the run)")
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		c.Query, args = args[0], args[1:]
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	c.Brokers = splitList(*brokers)
	fs.Visit(func(f *flag.Flag) { c.Given = append(c.Given, f.Name) })
	if err := c.Check(); err != nil { // before any work
		return err
	}
	if c.Engine, err = ef.config(fs, stderr); err != nil {
		return err
	}
	if !given(fs, "task-size") {
		c.Engine.TaskSize = 0 // whole tuples of the three tables
	}
	sig, end, err := ef.begin(&c.Engine, stderr)
	if err != nil {
		return err
	}
	defer closeInto(&err, end)
	stopProgress := func() {}
	c.Started = func(e *engine.Engine) { // on this goroutine, in bench.Run
		stopProgress = ef.startProgress(stderr, "nexmark "+c.Query, e, time.Now())
	}
	res, err := bench.Run(sig.Context(), c)
	stopProgress() // its last line is written before the summary
	if err != nil {
		return err
	}
	if res.Interrupted { // not by a signal after the sources ended
		res.Signal = sig.Name()
	}
	if !*asJSON {
		fmt.Fprintln(stdout, res.Text())
	} else if err := writeJSONLine(stdout, res); err != nil {
		return err
	}
	if res.Validated != nil && !*res.Validated {
		return fmt.Errorf("nexmark %s: output differs from the reference evaluator: %s", c.Query, res.Mismatch)
	} else if !res.Interrupted {
		return nil
	}
	return sig.Err(true)
}

func runNexmarkGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("nexmark generate", nexmarkGenSynopsis, stdout)
	g := bench.GenerateConfig{Log: stderr}
	brokers := nexmarkFlags(fs, &g.Nexmark, &g.TopicPrefix)
	fs.Int64Var(&g.Nexmark.Events, "events", 0, "events to write, every table's (> 0)")
	fs.StringVar(&g.Dir, "out", "", "directory of the files (person.json, auction.json, bid.json; events.json with --nested); none may exist, and a failed or interrupted run leaves none")
	fs.BoolVar(&g.Nested, "nested", false, "Nexmark's Kafka format, every event in one file or topic: {\"event_type\":..,\"person\":..,\"auction\":..,\"bid\":..}")
	if err := parse(fs, args); err != nil {
		return err
	}
	g.Brokers = splitList(*brokers)
	fs.Visit(func(f *flag.Flag) { g.Given = append(g.Given, f.Name) })
	sig := watchSignals(stderr)
	defer sig.Stop()
	res, err := bench.Generate(sig.Context(), g)
	if err != nil {
		return cmp.Or(sig.Err(false), err) // interrupted: exit 128 + N, the files removed
	}
	for _, name := range slices.Sorted(maps.Keys(res.Records)) {
		fmt.Fprintf(stdout, "%s: %d records\n", name, res.Records[name])
	}
	fmt.Fprintf(stdout, "%d events, %.0f MB in %.1f s\n", res.Events, float64(res.Bytes)/1e6, res.Seconds)
	return sig.Err(false)
}
