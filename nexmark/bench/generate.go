package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/sink"
	kafkasink "github.com/saber-hx/saber-hx/sink/kafka"
)

// GenerateConfig says what Generate writes.
type GenerateConfig struct {
	Nexmark nexmark.Config // the sequence; Events must be set (> 0)
	// Nested writes Nexmark's Kafka format, one record per event, every
	// table's: {"event_type":..,"person":..,"auction":..,"bid":..}
	// (nexmark.AppendKafkaJSON), to events.json or the topic
	// <prefix>events; else each table's flat records (nexmark.AppendJSON,
	// what the json and kafka sources of Config read) to person.json,
	// auction.json and bid.json, or the topics <prefix>person, ...
	Nested bool
	// Dir, where the files are written (none of them may exist), or
	// Brokers and TopicPrefix.
	Dir         string
	Brokers     []string
	TopicPrefix string
	Log         io.Writer // a progress line a second; nil: none
	// Given are the settings given explicitly, by saber-hx nexmark
	// generate's flag names: topic-prefix given with a Dir is refused (it
	// would do nothing).
	Given []string
	// wrap, if set, stands between each file and its buffer: the tests'
	// failing writes.
	wrap func(io.Writer) io.Writer
}

// GenerateResult counts what was written.
type GenerateResult struct {
	Events  int64            `json:"events"`
	Records map[string]int64 `json:"records"` // by file or topic
	Bytes   int64            `json:"bytes"`
	Seconds float64          `json:"seconds"`
}

// output is one file or topic.
type output struct {
	name  string
	file  *sink.File // written to a temporary file, renamed by Commit
	w     *bufio.Writer
	topic *kafkasink.Sink
	n     int64
}

const kafkaBatch = 4096 // records per Flush

// Generate writes cfg.Nexmark.Events events of the sequence as JSON lines
// to files or Kafka topics. Each file is written to a temporary file in
// Dir and renamed once every file is complete: where a write fails or ctx
// is cancelled, none of the files is left (nor Dir, where Generate made
// it and it is empty), so that a second Generate into Dir is not refused;
// a topic keeps the records sent.
func Generate(ctx context.Context, cfg GenerateConfig) (res *GenerateResult, err error) {
	if cfg.Nexmark.Events < 0 {
		return nil, usagef("generate: --events %d: must be positive", cfg.Nexmark.Events)
	}
	if cfg.Nexmark.Events == 0 {
		return nil, usagef("generate: give the number of events (--events N, > 0)")
	}
	if (cfg.Dir == "") == (len(cfg.Brokers) == 0) {
		return nil, usagef("generate: give a directory or Kafka brokers (--out DIR or --brokers B, one of them)")
	}
	if cfg.Dir != "" && slices.Contains(cfg.Given, "topic-prefix") {
		return nil, usagef("generate: --topic-prefix applies to --brokers' topics, not to --out's files")
	}
	g, err := nexmark.New(cfg.Nexmark)
	if err != nil {
		return nil, usagef("generate: %v", err)
	}
	names := []string{"events"}
	if !cfg.Nested {
		names = []string{nexmark.PersonTable.String(), nexmark.AuctionTable.String(), nexmark.BidTable.String()}
	}
	madeDir := false
	if cfg.Dir != "" {
		_, err := os.Lstat(cfg.Dir)
		madeDir = errors.Is(err, fs.ErrNotExist)
	}
	outs, err := openOutputs(ctx, cfg, names)
	var committed []string // files renamed into place
	defer func() {
		for _, o := range outs {
			if o.file != nil {
				_ = o.file.Abort() // removes the temporary file; nothing after Commit
			}
			if o.topic != nil {
				o.topic.Close()
			}
		}
		if err != nil {
			for _, path := range committed {
				_ = os.Remove(path)
			}
			if madeDir {
				_ = os.Remove(cfg.Dir) // only if empty
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	res = &GenerateResult{Records: map[string]int64{}}
	start, last := time.Now(), time.Now()
	var ev nexmark.Event
	var line []byte
	for g.Next(&ev) && ctx.Err() == nil {
		o := outs[0]
		if cfg.Nested {
			line = nexmark.AppendKafkaJSON(line[:0], &ev)
		} else {
			o = outs[ev.Table]
			line = nexmark.AppendJSON(line[:0], &ev)
		}
		if err := o.write(ctx, line); err != nil {
			return nil, err
		}
		res.Events++
		res.Bytes += int64(len(line)) + 1
		if res.Events%65536 == 0 && cfg.Log != nil && time.Since(last) >= time.Second {
			last = time.Now()
			fmt.Fprintf(cfg.Log, "nexmark generate: %d of %d events, %.0f MB\n", res.Events, cfg.Nexmark.Events, float64(res.Bytes)/1e6)
		}
	}
	if err := ctx.Err(); err != nil {
		left := "the files were removed"
		if cfg.Dir == "" {
			left = "the topics keep the records sent"
		}
		err = fmt.Errorf("generate: interrupted after %d of %d events, %s: %w", res.Events, cfg.Nexmark.Events, left, err)
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "nexmark %v\n", err)
		}
		return nil, err
	}
	for _, o := range outs {
		if err := o.flush(ctx); err != nil {
			return nil, err
		}
		res.Records[o.name] = o.n
	}
	for _, o := range outs {
		if o.file == nil {
			continue
		}
		if err := o.file.Commit(); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		committed = append(committed, o.name)
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func openOutputs(ctx context.Context, cfg GenerateConfig, names []string) ([]*output, error) {
	var outs []*output
	if cfg.Dir != "" {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		for _, n := range names {
			path := filepath.Join(cfg.Dir, n+".json")
			if _, err := os.Lstat(path); err == nil {
				return outs, usagef("generate: %s exists: remove it, or write to another directory", path)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return outs, fmt.Errorf("generate: %w", err)
			}
		}
		for _, n := range names {
			path := filepath.Join(cfg.Dir, n+".json")
			f, err := sink.Create(path)
			if err != nil {
				return outs, fmt.Errorf("generate: %w", err)
			}
			var w io.Writer = f
			if cfg.wrap != nil {
				w = cfg.wrap(w)
			}
			outs = append(outs, &output{name: path, file: f, w: bufio.NewWriterSize(w, 1<<20)})
		}
		return outs, nil
	}
	for _, n := range names {
		topic := cfg.TopicPrefix + n
		s, err := kafkasink.NewSink(ctx, kafkasink.SinkConfig{Brokers: cfg.Brokers, Topic: topic})
		if err != nil {
			return outs, fmt.Errorf("generate: %w", err)
		}
		outs = append(outs, &output{name: topic, topic: s})
	}
	return outs, nil
}

func (o *output) write(ctx context.Context, line []byte) error {
	o.n++
	if o.topic != nil {
		o.topic.Append(nil, line)
		if o.topic.Buffered() >= kafkaBatch {
			return o.flush(ctx)
		}
		return nil
	}
	o.w.Write(line)
	if err := o.w.WriteByte('\n'); err != nil {
		return o.writeError(err)
	}
	return nil
}

// writeError names the file once, as its final name: the error of the
// write names the temporary file.
func (o *output) writeError(err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("generate: write %s: %w", o.name, err)
}

func (o *output) flush(ctx context.Context) error {
	if o.topic != nil {
		if err := o.topic.Flush(ctx); err != nil {
			return fmt.Errorf("generate: %s: %w", o.name, err)
		}
		return nil
	}
	if err := o.w.Flush(); err != nil {
		return o.writeError(err)
	}
	return nil
}
