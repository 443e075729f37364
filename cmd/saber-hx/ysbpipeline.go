package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
	"github.com/saber-hx/saber-hx/ysb"
)

// The original Yahoo Streaming Benchmark's pipeline: setup (campaigns into
// Redis), produce (JSON events into Kafka), ysb --source kafka (the run,
// windows into Redis) and check (the windows against the oracle over the
// producer's log).

const (
	setupSynopsis   = "  saber-hx ysb setup --redis ADDR [--campaigns-out FILE] [--num-campaigns N] [--ads-per-campaign N] [--seed S] [--redis-* ...]\n"
	produceSynopsis = "  saber-hx ysb produce --brokers ADDR --topic ad-events --rate N --duration D [--skew D] [--late-fraction F] [--log FILE] [--partitions P]\n" +
		"        [--kafka-* ...]\n"
	checkSynopsis   = "  saber-hx ysb check --redis ADDR --events FILE [--watermark-delay D] [--ysb-counts] [--json] [--redis-* ...]\n"
	securedSynopsis = "  secured connections: --kafka-security-protocol, --kafka-sasl-*, --kafka-ssl-* (ysb produce, ysb --source kafka) and --redis-user,\n" +
		"        --redis-password-file, --redis-tls, ... or --redis rediss://user@host:port/db (ysb setup, ysb --source kafka, ysb check),\n" +
		"        as the SQL options (docs/operations.md, \"Secured connections\"); passwords from a file or " + kafkaPasswordEnv + ", " + redisPasswordEnv + "\n"
)

// pipelineCommand returns the subcommand of ysb that args name, if any.
func pipelineCommand(args []string) func(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return nil
	}
	switch args[0] {
	case "setup":
		return runYSBSetup
	case "produce":
		return runYSBProduce
	case "check":
		return runYSBCheck
	}
	return nil
}

// seedFlag registers --seed, the generator's splitmix64 seed (its ids).
func seedFlag(fs *flag.FlagSet) *uint64 {
	return fs.Uint64("seed", ysb.DefaultGenConfig().Seed, "generator seed: the campaign and ad ids (the same for setup and produce)")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func runYSBSetup(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ysb setup", setupSynopsis+securedSynopsis, stdout)
	var gf genFlags
	gf.register(fs)
	seed := seedFlag(fs)
	var rf secFlags
	redisServer := rf.registerRedis(fs, "Redis server (required)")
	csvOut := fs.String("campaigns-out", "", "also write the campaigns CSV (ad_id,campaign_id) here, replaced only once complete")
	if err := parseSecured(fs, args); err != nil {
		return err
	}
	gc, err := gf.config()
	if err != nil {
		return err
	}
	gc.Seed = *seed
	if *redisServer == "" {
		return usagef("ysb setup needs --redis")
	}
	server, err := rf.settings(fs, os.LookupEnv).Redis()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := ysb.Setup(ctx, ysb.SetupConfig{Server: server, Gen: gc, CampaignsCSV: *csvOut})
	if res.InRedis {
		fmt.Fprintf(stdout, "wrote %d campaigns (SADD %s) and %d ads (SET ad campaign) to redis %s\n", res.Campaigns, ysb.CampaignsKey, res.Ads, server.Addr)
	}
	if err != nil {
		return err
	}
	if *csvOut != "" {
		fmt.Fprintf(stdout, "wrote the campaigns table to %s\n", *csvOut)
	}
	return nil
}

func runYSBProduce(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ysb produce", produceSynopsis+securedSynopsis, stdout)
	var gf genFlags
	gf.register(fs)
	seed := seedFlag(fs)
	brokers := fs.String("brokers", "", "Kafka brokers, host:port[,host:port...] (required)")
	topic := fs.String("topic", "ad-events", "Kafka topic")
	rate := fs.Int("rate", 1000, "events per second")
	duration := fs.Duration("duration", 10*time.Second, "how long to produce (0: until SIGINT or SIGTERM)")
	var skewMs int64
	skew := &skewMs
	msVar(fs, skew, "skew", 0, "event_time is the wall clock at send plus up to ± this much (the original's -w)")
	lateFraction := fs.Float64("late-fraction", 0, "fraction of events whose event_time is a window (10 s) or more in the past")
	logPath := fs.String("log", "", "write every event acknowledged here, one line each: partition, a tab, the JSON (what ysb check reads)")
	partitions := fs.Int("partitions", 0, "spread the records round robin over partitions 0..P-1 (0: all the topic has; a missing topic is created with P)")
	var kf secFlags
	kf.register(fs, kafkaFlags, kafkaPasswordEnv)
	if err := parseSecured(fs, args); err != nil {
		return err
	}
	gc, err := gf.config()
	if err != nil {
		return err
	}
	gc.Seed = *seed
	bl := splitList(*brokers)
	switch {
	case len(bl) == 0:
		return usagef("ysb produce needs --brokers")
	case *topic == "":
		return usagef("--topic: name a topic")
	case *rate <= 0:
		return usagef("--rate %d: must be positive", *rate)
	case *duration < 0:
		return usagef("--duration %v: must not be negative", *duration)
	case *skew < 0:
		return usagef("--skew %d: must not be negative", *skew)
	case *lateFraction < 0 || *lateFraction > 1:
		return usagef("--late-fraction %v: want 0 to 1", *lateFraction)
	case *partitions < 0:
		return usagef("--partitions %d: must not be negative", *partitions)
	}
	sec, err := kf.settings(fs, os.LookupEnv).Kafka()
	if err != nil {
		return err
	}
	sig := watchSignals(stderr)
	defer sig.Stop()
	pc := ysb.ProduceConfig{Brokers: bl, Topic: *topic, Security: sec, Gen: gc, Rate: *rate, Duration: *duration, SkewMs: *skew,
		LateFraction: *lateFraction, Partitions: *partitions, Seed: *seed, LogFile: *logPath,
		Progress: func(p ysb.ProduceProgress) {
			fmt.Fprintf(stderr, "produce %5.0fs  sent %d  acked %d  %.0f events/s\n", p.Elapsed.Seconds(), p.Sent, p.Acked, p.Rate)
		}}
	res, err := ysb.Produce(sig.Context(), pc) // the log kept on an interrupt too
	if err != nil {
		return err
	}
	state := "done"
	if res.Interrupted {
		state = "interrupted"
	}
	fmt.Fprintf(stdout, "produce %s: %d events to %s in %.3f s: %.0f events/s (asked %d); late %d, failed %d; per partition %v\n",
		state, res.Events, *topic, res.Seconds, res.Rate, *rate, res.Late, res.Failed, res.PerPartition)
	return sig.Err(true)
}

func runYSBCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ysb check", checkSynopsis+securedSynopsis, stdout)
	var rf secFlags
	redisServer := rf.registerRedis(fs, "Redis server (required)")
	events := fs.String("events", "", "the log of ysb produce --log (required)")
	var delayMs int64
	delay := &delayMs
	msVar(fs, delay, "watermark-delay", 0, "the run's watermark delay")
	asJSON := fs.Bool("json", false, "print the result as one JSON object on the last line of stdout")
	ysbCounts := fs.Bool("ysb-counts", false, "also fail where redis is short of YSB's counts (every view in its window, none dropped as late)")
	if err := parseSecured(fs, args); err != nil {
		return err
	}
	if *redisServer == "" || *events == "" {
		return usagef("ysb check needs --redis and --events")
	}
	if *delay < 0 {
		return usagef("--watermark-delay %d: must not be negative", *delay)
	}
	server, err := rf.settings(fs, os.LookupEnv).Redis()
	if err != nil {
		return err
	}
	el, err := ysb.ReadEventLogFile(*events)
	if err != nil {
		return usageError{err} // the log cannot be read, or is not one
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := ysb.CheckServer(ctx, server, el, *delay)
	if err != nil {
		return err
	}
	const show = 10
	s := res.Summary(show)
	if *ysbCounts {
		s.RequireYSBCounts()
	}
	if *asJSON {
		if err := writeJSONLine(stdout, s); err != nil {
			return err
		}
	} else {
		s.WriteText(stdout)
	}
	return s.Err()
}

// ysbKafkaSummary is the summary of ysb --source kafka: ysb's, with the
// checkpoints (--json: "checkpoints").
type ysbKafkaSummary struct {
	ysbSummary
	// RestoredTuples are the tuples counted before the checkpoint the run
	// restored: with the run's own (Tuples), the stream's.
	RestoredTuples uint64                      `json:"restored_tuples,omitempty"`
	Checkpoints    *pipeline.CheckpointSummary `json:"checkpoints,omitempty"`
}

// runYSBKafka is ysb --source kafka: the run of the original pipeline,
// the query of examples/ysb_kafka.sql run by package pipeline (as run
// runs a program) with o; brokers is --brokers as given. --duration
// (durationSet) bounds it only when given; otherwise it runs until
// SIGINT or SIGTERM.
func runYSBKafka(a pipeline.YSBKafka, brokers string, o pipeline.Options, retryTimeout time.Duration, durationSet bool, ef *engineFlags, asJSON bool,
	stdout, stderr io.Writer) (err error) {
	switch {
	case len(a.Brokers) == 0:
		return usagef("--source kafka needs --brokers")
	case a.Redis == "":
		return usagef("--source kafka needs --redis")
	case a.Topic == "":
		return usagef("--topic: name a topic")
	case a.DelayMs < 0:
		return usagef("--watermark-delay %d: must not be negative", a.DelayMs)
	case o.CheckpointInterval <= 0:
		return usagef("--checkpoint-interval %v: must be positive", o.CheckpointInterval)
	case durationSet && o.Duration <= 0:
		return usagef("--duration %v: must be positive", o.Duration)
	}
	if o.SinkRetryTimeout, err = pipeline.SinkRetryTimeout(retryTimeout); err != nil {
		return err
	}
	prog, campaigns, ads, err := pipeline.YSBKafkaProgram(context.Background(), a)
	if err != nil {
		return err
	}
	opened := func() {
		fmt.Fprintf(stderr, "ysb kafka: %d campaigns, %d ads from redis %s; reading %s from %s", campaigns, ads, a.Redis, a.Topic, brokers)
		if o.Instances > 1 {
			fmt.Fprintf(stderr, " (instance %d of %d)", o.Instance, o.Instances)
		}
		fmt.Fprintln(stderr)
		if o.Instances > 1 {
			// Redis' seen_count is absolute: instances that count the same
			// window overwrite each other's part (docs/operations.md).
			fmt.Fprintf(stderr, "saber-hx: warning: --instances %d: the counts are exact only where each campaign's events are in one instance's partitions "+
				"(ysb produce spreads them over every partition: each instance's partial seen_count overwrites the others')\n", o.Instances)
		}
	}
	return runProgram(prog, o, ef, "ysb kafka", stderr, opened, func(sum *pipeline.Summary, job *pipeline.Job, sig *interrupt, cfg engine.Config) error {
		// This run's figures: a restored engine's counters go on from
		// the checkpoint's.
		restored := job.Engine().Stream(0).RestoredStats()
		st := sum.Stats[0].Since(restored)
		s := ysbKafkaSummary{ysbSummary: summarize("kafka", st, sum.Seconds, ef), RestoredTuples: restored.Tuples, Checkpoints: sum.Checkpoints}
		procs := pipeline.SummarizeProcessors(job.Engine().Scheduling(), job.Engine().StreamNames(), cfg, ef.GPUEmulate, sum.GPUFallbackTasks())
		s.Processors, s.Policy = &procs, string(cfg.Policy)
		if sum.Interrupted {
			s.Interrupted, s.Signal = true, sig.Name()
		}
		src := sum.Sources[0]
		fmt.Fprintf(stderr, "ysb kafka: %d records from %s (%d malformed); %d window rows to redis %s\n",
			src.Tuples+src.Malformed, a.Topic, src.Malformed, st.Rows, a.Redis)
		if asJSON {
			return writeJSONLine(stdout, s)
		}
		if err := printSummary(s.ysbSummary, false, stdout); err != nil {
			return err
		}
		if s.Checkpoints != nil {
			printCheckpoints(stdout, s.Checkpoints)
		}
		return nil
	})
}
