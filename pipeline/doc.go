// Package pipeline runs a SQL program: the runtime that the command line
// (`saber-hx run`, `ysb --source kafka`) is a thin layer on, and that a Go
// program embeds.
//
// A Program is compiled from SQL text (package sql has the dialect). Its
// sources are read by their connectors (files, standard input, generators,
// Kafka) or fed from Go (AttachSource: a writer of tuples; AttachReader:
// records in the declared format); its queries' rows go to their declared
// outputs (files, standard output, Kafka, Redis) or to a Go callback per
// batch of rows (OnRows). Open readies a Job (outputs and sources open, a
// checkpoint chosen to restore); Run runs it until the sources end, then
// drains: every tuple read is merged, every window emitted, the outputs
// flushed and committed. A cancelled context stops the sources and drains
// too, but the run is interrupted (Summary.Interrupted) and its file
// outputs are not committed, unless every source had ended first.
// Checkpoint takes a checkpoint on demand besides the periodic ones;
// Summary, Job.Engine and Options.Metrics give what ran.
//
//	prog, err := pipeline.Compile("q.sql", text)
//	prog.AttachReader("events", r)
//	prog.OnRows("counts", func(rows *pipeline.Rows) error { ... })
//	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 4}})
//	defer job.Close()
//	sum, err := job.Run(ctx)
//
// The files hold the stages: program.go (the Program and its options),
// run.go (the Job: open, run, drain, summary), source.go (the one feed
// loop of every source) and decodepool.go (its decoding on the workers),
// sink.go and rows.go (the outputs, and Rows and TupleWriter, the Go side
// of them), flush.go (the outputs flushed and the Kafka offsets
// committed), checkpoint*.go (checkpoints, the transactional Kafka
// outputs and the files' parts), retry.go and metrics.go (outages and
// their metrics), validate.go (Options.Validate's oracle beside the run),
// explain.go (a program's plan), nexmark.go (the nexmark connector's
// feed), ysb.go (the original YSB pipeline's program); settings.go, processors.go and progress.go are
// what the command line runs the engine with (EngineSettings: its
// tuning knobs checked into engine.Config) and reports of it (the
// scheduling part of a summary, the progress line's figures).
package pipeline
