// Command kafka-ceiling reads a topic from its start as fast as franz-go
// fetches it, decoding nothing, and prints the records per second: the
// ceiling of franz-go's consumer on this machine, against which
// build/bench-pipeline.sh puts the YSB pipeline's events per second.
// Each of --clients consumer clients reads every --clients-th partition,
// as the Kafka source's fetchers do, with the source's pools of record
// and decompression memory (--pools=false: without).
//
// With --raw N it leaves the consumer out: one client sends the fetch
// requests and reads only the batches' headers before it sends the next,
// and N goroutines check, decompress and parse the batches (see rawRead):
// what a source could read that parses on its workers rather than on
// the consumer's one goroutine per broker.
//
//	go run ./internal/cmd/kafka-ceiling --brokers 127.0.0.1:9092 --topic ad-events --clients 2
//	go run ./internal/cmd/kafka-ceiling --brokers 127.0.0.1:9092 --topic ad-events --raw 2
//
// With --json the last line is also the figures as one JSON object
// (records, seconds, tuples_per_s), as saber-hx's --json summaries, for
// the GPU bundle's run.sh, which reads the broker's ceiling on the
// device's cores beside the pipeline.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kgopool"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "the brokers, a comma list")
	topic := flag.String("topic", "ad-events", "the topic, read from its start to the end it has when the command starts")
	clients := flag.Int("clients", 1, "consumer clients, each reading every clients-th partition")
	pooled := flag.Bool("pools", true, "the consumer clients take their record and decompression buffers from pools (internal/kgopool), each record recycled once counted, as the Kafka source does; false: they allocate them")
	raw := flag.Int("raw", 0, "read with one client's fetch requests, leaving out its consumer: the batches parsed by this many goroutines (0: the consumer)")
	asJSON := flag.Bool("json", false, "also print the figures as one JSON object on the last line (records, seconds, tuples_per_s)")
	flag.Parse()
	if flag.NArg() > 0 || *clients < 1 || *raw < 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(os.Stdout, strings.Split(*brokers, ","), *topic, *clients, *raw, *pooled, *asJSON); err != nil {
		fmt.Fprintf(os.Stderr, "kafka-ceiling: %v\n", err)
		os.Exit(1)
	}
}

func run(w io.Writer, brokers []string, topic string, clients, raw int, pooled, asJSON bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	meta, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	adm := kadm.NewClient(meta)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	var ends kadm.ListedOffsets
	if err == nil {
		if ends, err = adm.ListEndOffsets(ctx, topic); err == nil {
			err = ends.Error()
		}
	}
	meta.Close()
	if err != nil {
		return fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	var total int64
	var parts []int32
	from := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		s, _ := starts.Lookup(topic, o.Partition)
		total += o.Offset - s.Offset
		parts = append(parts, o.Partition)
		from[o.Partition] = s.Offset
	})
	if total == 0 {
		return fmt.Errorf("topic %s is empty", topic)
	}
	how := fmt.Sprintf("%d clients", clients)
	read := func() (int64, error) { return consume(ctx, brokers, topic, parts, total, clients, pooled) }
	if raw > 0 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err != nil {
			return err
		}
		defer cl.Close()
		how = fmt.Sprintf("1 client's fetches, %d parsers,", raw)
		read = func() (int64, error) { return rawRead(ctx, cl, topic, from, total, raw) }
	}
	start := time.Now()
	n, err := read()
	took := time.Since(start)
	if err != nil {
		return err
	}
	if n < total {
		return fmt.Errorf("read %d of %d records before the deadline", n, total)
	}
	perS := float64(total) / took.Seconds()
	fmt.Fprintf(w, "read %d records with %s in %.3f s: %.3f M records/s\n", total, how, took.Seconds(), perS/1e6)
	if asJSON {
		b, err := json.Marshal(map[string]any{"records": total, "seconds": took.Seconds(), "tuples_per_s": perS, "clients": clients, "raw": raw})
		if err != nil {
			return err
		}
		fmt.Fprintln(w, string(b))
	}
	return nil
}

// consume reads total records of the topic's parts from their start with
// franz-go's consumer: clients clients, each reading every clients-th
// partition, with the Kafka source's pools where pooled. It returns the
// records read.
func consume(ctx context.Context, brokers []string, topic string, parts []int32, total int64, clients int, pooled bool) (int64, error) {
	var read atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	rctx, done := context.WithCancel(ctx)
	defer done()
	for c := range min(clients, len(parts)) {
		mine := map[int32]kgo.Offset{}
		for i := c; i < len(parts); i += clients {
			mine[parts[i]] = kgo.NewOffset().AtStart()
		}
		// The Kafka source's fetch sizes.
		opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.FetchMaxBytes(8 << 20), kgo.FetchMaxPartitionBytes(1 << 20),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: mine})}
		if pooled {
			opts = append(opts, kgo.WithPools(kgopool.New()))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			done()
			wg.Wait()
			return 0, err
		}
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rctx.Err() == nil {
				fs := cl.PollRecords(rctx, 0)
				if err := fs.Err0(); err != nil && !errors.Is(err, context.Canceled) {
					errs <- err
					done()
					return
				}
				if pooled {
					fs.EachRecord(func(r *kgo.Record) { r.Recycle() })
				}
				if read.Add(int64(fs.NumRecords())) >= total {
					done()
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return read.Load(), err
	default:
	}
	return read.Load(), nil
}
