package main

// bench's own flags and their parsing.

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/workloads"
)

// benchFlags are bench's own flags (the engine's are engineFlags).
type benchFlags struct {
	list, asJSON, validate bool
	duration               time.Duration
	warmup                 time.Duration
	validateTuples         int
	given                  []string // the flags given (workloads.BenchConfig.Given)
	bundleSize             int
	ingest                 string
	window                 workloads.WindowOverride // --window-type, --window-size, --window-slide
	size, slide            msFlag                   // --window-size, --window-slide: durations or counts
	agg                    string
	params                 workloads.Params
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	def := workloads.DefaultParams()
	f.params = def
	p := &f.params
	fs.BoolVar(&f.list, "list", false, "list the workloads and exit")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "ingestion time of the measured interval")
	fs.DurationVar(&f.warmup, "warmup", 0, "ingestion time before the measured interval, in which the windows' state grows to its working size "+
		"(as the C yardsticks' warm-up pass); the summary's figures, GC cycles and allocations are those of the measured interval, validation checks the whole run")
	fs.BoolVar(&f.asJSON, "json", false, "print the summary as one JSON object on the last line of stdout (interrupted: true when SIGINT or SIGTERM stopped the run)")
	fs.BoolVar(&f.validate, "validate", false, "check every emitted window (or output tuple) against the reference evaluator; bounds the input to --validate-tuples per query")
	fs.IntVar(&f.validateTuples, "validate-tuples", 0, "with --validate: tuples per input at most (default: each workload's bound, under which "+
		"the naive reference evaluator takes well under a minute on two cores: "+validateBounds()+")")
	fs.IntVar(&f.bundleSize, "bundle-size", 16<<20, fmt.Sprintf("bytes of pre-generated tuples replayed into each ring, at most %d (larger: that), rounded to whole generator periods", workloads.MaxBundleSize))
	fs.StringVar(&f.ingest, "ingest", "auto", ingestUsage+"; an input generated on the fly (no bundle) is always the producer's "+
		"(docs/workloads.md has what each mode gave these workloads)")
	fs.StringVar(&f.window.Type, "window-type", "", "range or row (default: the workload's); each window flag replaces one field of the workload's window")
	f.size, f.slide = msFlag{ms: &f.window.Size}, msFlag{ms: &f.window.Slide}
	fs.Var(&f.size, "window-size", "window size, > 0: a duration (10s) or ms for range windows, tuples for row windows (default: the workload's; "+
		"a tumbling workload window stays tumbling)")
	fs.Var(&f.slide, "window-slide", "window slide, 0 < slide <= size, as --window-size (default: the workload's)")
	fs.IntVar(&p.Attributes, "attributes", def.Attributes, "proj: projected expressions")
	fs.IntVar(&p.ExprDepth, "expr-depth", def.ExprDepth, "proj: depth of each arithmetic expression")
	fs.IntVar(&p.Predicates, "predicates", def.Predicates, "select: predicates")
	fs.Float64Var(&p.Selectivity, "selectivity", def.Selectivity, "select: fraction of tuples that pass, in [0, 1]")
	fs.StringVar(&f.agg, "agg", "avg", "agg: count|sum|avg|min|max")
	fs.IntVar(&p.Groups, "groups", def.Groups, "groupby: distinct keys")
	fs.IntVar(&p.JoinPredicates, "join-predicates", def.JoinPredicates, "join: predicates per pair (JOIN_r's r)")
	fs.IntVar(&p.TuplesPerMs, "tuples-per-ms", 0, "event-time rate of the generators (default: each workload's)")
}

// validateBounds lists each workload's default --validate-tuples.
func validateBounds() string {
	var parts []string
	for _, w := range workloads.All() {
		parts = append(parts, fmt.Sprintf("%s %d", w.Name, w.ValidateTuples))
	}
	return strings.Join(parts, ", ")
}

// parseBench parses bench's arguments: the workload list may come before
// or after the flags. It returns the list ("" with --list).
func parseBench(fs *flag.FlagSet, f *benchFlags, args []string) (string, error) {
	var names string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		names, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if names == "" && fs.NArg() > 0 {
		names = fs.Arg(0)
		if err := parseFlags(fs, fs.Args()[1:]); err != nil {
			return "", err
		}
	}
	if fs.NArg() > 0 {
		return "", usagef("bench: unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(fl *flag.Flag) {
		f.given = append(f.given, fl.Name)
		switch fl.Name {
		case "window-type":
			f.window.TypeSet = true
		case "window-size":
			f.window.SizeSet, f.window.SizeTime = true, f.size.duration
		case "window-slide":
			f.window.SlideSet, f.window.SlideTime = true, f.slide.duration
		}
	})
	if f.list {
		return "", nil
	}
	if names == "" {
		return "", usagef("bench: name a workload (valid: %s), or --list", strings.Join(workloads.Names(), ", "))
	}
	agg, ok := query.AggFuncs[f.agg]
	if !ok {
		return "", usagef("agg %q: valid: count, sum, avg, min, max", f.agg)
	}
	f.params.Agg = agg
	return names, nil
}
