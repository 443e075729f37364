// Package kafkatest starts Kafka brokers for tests: franz-go's in-memory
// kfake cluster on loopback (no external server), and runs kcat, the
// independent client that checks the connectors against a second Kafka
// implementation where it is installed.
//
// A restartable cluster (StartRestartable) keeps its state in a
// directory (kfake's persistence): Stop shuts the broker down (its
// listener closed, every client connection cut, its logs, group offsets
// and transactions saved) and Restart starts it again on the same port
// from that directory, as a broker restarted by a deploy comes back.
package kafkatest

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Cluster is a running kfake cluster.
type Cluster struct {
	*kfake.Cluster
	Addr string // the seed broker, host:port

	// A restartable cluster's: its options (with its data directory) and
	// port; stopped while it is down.
	opts    []kfake.Opt
	port    int
	stopped bool
}

// Start starts a one-broker kfake cluster on 127.0.0.1 whose topics are
// created on first use with partitions partitions, pre-creates topics with
// as many, and closes it when t ends. Group session timeouts are allowed
// down to 100ms so that rebalance tests do not wait out Kafka's defaults.
func Start(t testing.TB, partitions int, topics ...string) *Cluster {
	t.Helper()
	c, err := kfake.NewCluster(options(partitions, topics)...)
	if err != nil {
		t.Fatalf("kafkatest: start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return &Cluster{Cluster: c, Addr: c.ListenAddrs()[0]}
}

func options(partitions int, topics []string) []kfake.Opt {
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(partitions),
		kfake.GroupMinSessionTimeout(100 * time.Millisecond),
	}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(partitions), topics...))
	}
	return opts
}

// StartRestartable is Start for a cluster that a test stops and restarts
// (Stop, Restart): its state is kept in a temporary directory. Call Stop
// and Restart from one goroutine; they replace the embedded
// *kfake.Cluster, which only that goroutine may then use.
func StartRestartable(t testing.TB, partitions int, topics ...string) *Cluster {
	t.Helper()
	opts := append(options(partitions, topics), kfake.DataDir(t.TempDir()))
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kafkatest: start kfake: %v", err)
	}
	addr := c.ListenAddrs()[0]
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		c.Close()
		t.Fatalf("kafkatest: kfake's address %q: %v", addr, err)
	}
	cl := &Cluster{Cluster: c, Addr: addr, opts: opts}
	cl.port, _ = strconv.Atoi(port)
	t.Cleanup(func() { cl.Cluster.Close() })
	return cl
}

// Stop shuts a restartable cluster down: clients get their connections
// cut and then refused, until Restart.
func (c *Cluster) Stop() {
	if c.opts == nil {
		panic("kafkatest: Stop of a cluster not started by StartRestartable")
	}
	c.Cluster.Close()
	c.stopped = true
}

// Restart starts a stopped cluster again on the same port, from its
// saved state; it fails t if it cannot.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	if !c.stopped {
		c.Stop()
	}
	var err error
	// The port is free once the listener is closed; a client's new
	// connection attempts do not hold it. Retry a little all the same.
	for range 50 {
		var k *kfake.Cluster
		if k, err = kfake.NewCluster(append(c.opts, kfake.Ports(c.port))...); err == nil {
			c.Cluster, c.stopped = k, false
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("kafkatest: restart kfake on port %d: %v", c.port, err)
}

// Broker is Start for a test that needs only the seed address.
func Broker(t testing.TB, partitions int, topics ...string) string {
	t.Helper()
	return Start(t, partitions, topics...).Addr
}

// RequireServers is whether SABER_HX_REQUIRE_SERVERS=1: then a test that
// needs an external program fails when it is missing, instead of skipping.
func RequireServers() bool { return os.Getenv("SABER_HX_REQUIRE_SERVERS") == "1" }

// Kcat returns the path of kcat (or kafkacat), skipping t when neither is
// installed (failing it under SABER_HX_REQUIRE_SERVERS=1).
func Kcat(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if RequireServers() {
		t.Fatal("kafkatest: kcat is not installed and SABER_HX_REQUIRE_SERVERS=1")
	}
	t.Skip("kafkatest: kcat is not installed (apt-get install kcat); set SABER_HX_REQUIRE_SERVERS=1 to make this a failure")
	return ""
}

// RunKcat runs kcat with args and stdin, and returns its standard output;
// a non-zero exit fails t with kcat's standard error. It is killed after
// 30 seconds so that a hung consumer cannot hang the test binary.
func RunKcat(t testing.TB, stdin []byte, args ...string) []byte {
	t.Helper()
	path := Kcat(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafkatest: kcat %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}

// Produce writes recs to topic, each to the partition it names, through
// a client of its own made with opts besides (a codec, a batch size), and
// waits for every one; t fails on an error.
func Produce(t testing.TB, addr, topic string, recs []*kgo.Record, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatalf("producer of %s: %v", topic, err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}
