// Command kafka-local runs a Kafka broker for development and tests:
// franz-go's kfake, in this process, with every record in memory. Topics
// are created on first use with --partitions partitions; --topic creates
// some at start. It runs until SIGINT or SIGTERM.
//
//	go run ./cmd/kafka-local --addr 127.0.0.1:9092 --partitions 4 --topic events
//
// It is not a production broker: there is one broker and no replication,
// and without --data-dir nothing is written to disk. With --data-dir DIR
// it saves its topics, records, group offsets and transactions there when
// stopped and loads them when started again: stopping it and starting it
// again on the same address rehearses a broker's restart.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

// topicList is a repeatable flag whose values may also be comma lists.
type topicList []string

func (l *topicList) String() string { return strings.Join(*l, ",") }

func (l *topicList) Set(v string) error {
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t == "" {
			return errors.New("empty topic name")
		}
		*l = append(*l, t)
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: 0 after a signal, 1 when the broker cannot start, 2
// for a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kafka-local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9092", "`host:port` to listen on (port 0: any free port)")
	parts := fs.Int("partitions", 1, "partitions of each topic created")
	var topics topicList
	fs.Var(&topics, "topic", "a topic to create at start (repeatable, or a comma list)")
	dataDir := fs.String("data-dir", "", "keep the broker's state in this `directory` across restarts (empty: in memory only)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kafka-local [--addr host:port] [--partitions n] [--topic name]... [--data-dir dir]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kafka-local: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	if *parts < 1 || *parts > 1<<16 {
		fmt.Fprintf(stderr, "kafka-local: --partitions %d: want 1 to 65536\n", *parts)
		return 2
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		fmt.Fprintf(stderr, "kafka-local: --addr %q: %v\n", *addr, err)
		return 2
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*parts),
		// kfake asks for the address it would pick; this broker listens
		// where it was told.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, *addr) }),
	}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(*parts), topics...))
	}
	where := "data in memory only"
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
		where = "data kept in " + *dataDir
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "kafka-local: %v\n", err)
		return 1
	}
	defer c.Close()
	fmt.Fprintf(stdout, "kafka-local: a development broker (not for production; %s) listening on %s, topics created with %d partitions\n",
		where, strings.Join(c.ListenAddrs(), ","), *parts)
	<-ctx.Done()
	return 0
}
