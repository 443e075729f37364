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
	file  *os.File
	w     *bufio.Writer
	topic *kafkasink.Sink
	n     int64
}

const kafkaBatch = 4096 // records per Flush

// Generate writes cfg.Nexmark.Events events of the sequence as JSON lines
// to files or Kafka topics, until ctx is cancelled (what was written
// stays: the files are complete up to the last whole record).
func Generate(ctx context.Context, cfg GenerateConfig) (*GenerateResult, error) {
	if cfg.Nexmark.Events <= 0 {
		return nil, usagef("generate: give the number of events (> 0)")
	}
	if (cfg.Dir == "") == (len(cfg.Brokers) == 0) {
		return nil, usagef("generate: give a directory or Kafka brokers (one of them)")
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
	outs, err := openOutputs(ctx, cfg, names)
	defer func() {
		for _, o := range outs {
			if o.file != nil {
				o.file.Close()
			}
			if o.topic != nil {
				o.topic.Close()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	res := &GenerateResult{Records: map[string]int64{}}
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
	for _, o := range outs {
		if err := o.flush(ctx); err != nil {
			return nil, err
		}
		res.Records[o.name] = o.n
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
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return outs, fmt.Errorf("generate: %w", err)
			}
			outs = append(outs, &output{name: path, file: f, w: bufio.NewWriterSize(f, 1<<20)})
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
		return fmt.Errorf("generate: write %s: %w", o.name, err)
	}
	return nil
}

func (o *output) flush(ctx context.Context) error {
	if o.topic != nil {
		if err := o.topic.Flush(ctx); err != nil {
			return fmt.Errorf("generate: %s: %w", o.name, err)
		}
		return nil
	}
	if err := o.w.Flush(); err != nil {
		return fmt.Errorf("generate: write %s: %w", o.name, err)
	}
	return nil
}
