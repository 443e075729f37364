// Package kafkatest starts Kafka brokers for tests: franz-go's in-memory
// kfake cluster on loopback (no external server), and runs kcat, the
// independent client that checks the connectors against a second Kafka
// implementation where it is installed.
package kafkatest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Cluster is a running kfake cluster.
type Cluster struct {
	*kfake.Cluster
	Addr string // the seed broker, host:port
}

// Start starts a one-broker kfake cluster on 127.0.0.1 whose topics are
// created on first use with partitions partitions, pre-creates topics with
// as many, and closes it when t ends. Group session timeouts are allowed
// down to 100ms so that rebalance tests do not wait out Kafka's defaults.
func Start(t testing.TB, partitions int, topics ...string) *Cluster {
	t.Helper()
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(partitions),
		kfake.GroupMinSessionTimeout(100 * time.Millisecond),
	}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(partitions), topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kafkatest: start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return &Cluster{Cluster: c, Addr: c.ListenAddrs()[0]}
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
