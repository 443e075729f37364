package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/saber-hx/saber-hx/internal/kafkatest"
	"github.com/saber-hx/saber-hx/internal/redistest"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/internal/tlstest"
	"github.com/saber-hx/saber-hx/ysb"
)

// The passwords of the secured servers: distinctive, so that a search
// of any output for them finds nothing else.
const (
	kafkaPass = "k4fka-Pa55-never-shown-3f9c"
	redisPass = "red1s-Pa55-never-shown-b7e2"
	aclPass   = "acl-Pa55-never-shown-51d0"
)

// securedServers are a Kafka broker that requires SASL_SSL (SCRAM-SHA-512
// and SCRAM-SHA-256, user saber) and a Redis on a TLS port only, with a
// password (requirepass) and an ACL user "ysb", their certificates signed
// by pki; the password files are in dir.
type securedServers struct {
	pki                               *tlstest.PKI
	kafka                             kafkatest.Secure
	broker                            string
	redis                             *redistest.SecureServer
	kafkaPassFile, redisPassFile, acl string
}

func startSecured(t *testing.T, partitions int, topics ...string) *securedServers {
	t.Helper()
	s := &securedServers{pki: tlstest.New(t)}
	s.kafka = kafkatest.Secure{User: "saber", Password: kafkaPass, TLS: s.pki, Mechanisms: []string{security.ScramSHA512, security.ScramSHA256}}
	s.broker = kafkatest.StartSecure(t, s.kafka, partitions, topics...).Addr
	s.redis = redistest.StartSecure(t, redistest.Secure{Password: redisPass, TLS: s.pki, Users: []redistest.ACLUser{{Name: "ysb", Password: aclPass}}})
	dir := t.TempDir()
	s.kafkaPassFile, s.redisPassFile, s.acl = passwordFile(t, dir, "kafka", kafkaPass), passwordFile(t, dir, "redis", redisPass),
		passwordFile(t, dir, "acl", aclPass)
	return s
}

// passwordFile writes a password, and a newline as an editor leaves one.
func passwordFile(t *testing.T, dir, name, password string) string {
	t.Helper()
	path := filepath.Join(dir, name+".password")
	require.NoError(t, os.WriteFile(path, []byte(password+"\n"), 0o600))
	return path
}

// kafkaArgs are the Kafka flags of a client of the broker; password is
// the file of the password (a wrong one for a refusal).
func (s *securedServers) kafkaArgs(password, ca string) []string {
	return []string{"--kafka-security-protocol", "SASL_SSL", "--kafka-sasl-mechanism", "SCRAM-SHA-512", "--kafka-sasl-username", "saber",
		"--kafka-sasl-password-file", password, "--kafka-ssl-ca", ca}
}

// redisURLArgs reach Redis as the ACL user through a rediss:// URL;
// redisArgs as the default user through --redis-tls.
func (s *securedServers) redisURLArgs(password, ca string) []string {
	return []string{"--redis", "rediss://ysb@" + s.redis.Addr + "/0", "--redis-password-file", password, "--redis-ca", ca}
}

func (s *securedServers) redisArgs(password, ca string) []string {
	return []string{"--redis", s.redis.Addr, "--redis-tls", "--redis-password-file", password, "--redis-ca", ca}
}

func (s *securedServers) redisServer() security.Redis {
	return security.Redis{Addr: s.redis.Addr, Password: security.NewSecret(redisPass), TLS: true, CA: s.pki.CA}
}

// assertNoSecret fails where a text, or a file under dir (any depth),
// holds a password or the private key of a certificate.
func assertNoSecret(t *testing.T, pki *tlstest.PKI, texts map[string]string, dirs ...string) {
	t.Helper()
	secrets := []string{kafkaPass, redisPass, aclPass}
	for _, key := range []string{pki.ClientKey, pki.ServerKey} {
		b, err := os.ReadFile(key)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		secrets = append(secrets, lines[len(lines)-2]) // the key's last line of base64: its own bits
	}
	for _, dir := range dirs {
		n := 0
		require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			texts[path] = string(b)
			n++
			return err
		}))
		require.Positive(t, n, "no file in %s", dir)
	}
	for name, text := range texts {
		for _, s := range secrets {
			assert.NotContains(t, text, s, "%s shows a secret", name)
		}
	}
}

// TestYSBPipelineSecured runs the original benchmark's pipeline over
// secured connections: setup (Redis's ACL user through a rediss:// URL,
// the password from a file), produce (SASL_SSL, SCRAM-SHA-512), the run
// to the end of the topic, and check (Redis's default user, --redis-tls):
// check finds every window exact and the run's counts; no output of any
// command shows a password.
func TestYSBPipelineSecured(t *testing.T) {
	t.Parallel()
	s := startSecured(t, 2, "ad-events")
	dir := t.TempDir()
	gen := []string{"--num-campaigns", "10", "--ads-per-campaign", "4", "--seed", "5"}
	outputs := map[string]string{}
	step := func(name string, args ...string) string {
		t.Helper()
		code, out, errs := cli(t, args...)
		outputs[name+" stdout"], outputs[name+" stderr"] = out, errs
		require.Equal(t, 0, code, "%s: %s", name, errs)
		return out
	}

	csvPath := filepath.Join(dir, "campaigns.csv")
	out := step("setup", append(append([]string{"ysb", "setup", "--campaigns-out", csvPath}, s.redisURLArgs(s.acl, s.pki.CA)...), gen...)...)
	assert.Contains(t, out, "wrote 10 campaigns (SADD campaigns) and 40 ads (SET ad campaign) to redis "+s.redis.Addr+"\n")

	logPath := filepath.Join(dir, "events.log")
	out = step("produce", append(append([]string{"ysb", "produce", "--brokers", s.broker, "--topic", "ad-events", "--rate", "2000",
		"--duration", "1s", "--skew", "500", "--partitions", "2", "--log", logPath}, s.kafkaArgs(s.kafkaPassFile, s.pki.CA)...), gen...)...)
	assert.Contains(t, out, "produce done:")

	out = step("ysb --source kafka", append(append([]string{"ysb", "--source", "kafka", "--brokers", s.broker, "--topic", "ad-events",
		"--stop-at-end", "--workers", workers, "--task-size", "2048", "--json"}, s.kafkaArgs(s.kafkaPassFile, s.pki.CA)...),
		s.redisURLArgs(s.acl, s.pki.CA)...)...)
	sum, _ := parseSummary(t, out)
	assert.Positive(t, sum.Counted)
	assert.Contains(t, outputs["ysb --source kafka stderr"], "ysb kafka: 10 campaigns, 40 ads from redis "+s.redis.Addr+"; reading ad-events from "+s.broker)

	out = step("check", append([]string{"ysb", "check", "--events", logPath, "--json"}, s.redisArgs(s.redisPassFile, s.pki.CA)...)...)
	var cs ysb.CheckSummary
	require.NoError(t, json.Unmarshal([]byte(lastLine(out)), &cs))
	assert.True(t, cs.OK, out)
	assert.Zero(t, cs.Mismatches)
	assert.Positive(t, cs.Windows)
	assert.Equal(t, sum.Counted, cs.Counts.Counted)
	assert.Equal(t, sum.Tuples, uint64(cs.Events))
	assertNoSecret(t, s.pki, outputs)
}

// securedSQL is a program over the secured servers: a Kafka source of
// JSON records, a Kafka sink of counts per window and cat, and a Redis
// sink of the same (ACL user ysb, rediss://), the passwords read from the
// environment variables kafkaVar and redisVar.
func securedSQL(s *securedServers, kafkaVar, redisVar, ca string) string {
	sec := fmt.Sprintf(`properties.security.protocol = 'SASL_SSL', properties.sasl.mechanism = 'SCRAM-SHA-256',
  properties.sasl.username = 'saber', properties.sasl.password = '${%s}', properties.ssl.ca.location = '%s'`, kafkaVar, ca)
	return fmt.Sprintf(`
CREATE SOURCE events (ts BIGINT, cat INT, v INT)
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'events', group = 'secured', format = 'json', idle_timeout = '200ms',
  %[2]s);
CREATE SINK to_kafka AS
  SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s FROM TUMBLE(events, ts, INTERVAL '100' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'kafka', brokers = '%[1]s', topic = 'counts', key = 'cat', %[2]s);
CREATE SINK to_redis AS
  SELECT window_start, cat, COUNT(*) AS n, SUM(v) AS s FROM TUMBLE(events, ts, INTERVAL '100' MILLISECOND) GROUP BY window_start, cat
  WITH (connector = 'redis', url = 'rediss://ysb:${%[3]s}@%[4]s/0', tls.ca = '%[5]s', key = 'w:{window_start}:{cat}', flush = '100ms');
`, s.broker, sec, redisVar, s.redis.Addr, ca)
}

// envCounter makes the environment variables' names of the tests unique:
// they run in parallel in one process.
var envCounter atomic.Int64

// setEnv sets a variable of a name of its own for the test (t.Setenv
// refuses a parallel test) and returns the name.
func setEnv(t *testing.T, prefix, value string) string {
	name := fmt.Sprintf("SABER_HX_TEST_%s_%d", prefix, envCounter.Add(1))
	require.NoError(t, os.Setenv(name, value))
	t.Cleanup(func() { _ = os.Unsetenv(name) })
	return name
}

// TestRunSecured runs a SQL program over secured connections, the
// passwords in ${NAME}: a Kafka source and sink over SASL_SSL
// (SCRAM-SHA-256) and a Redis sink over TLS as an ACL user, checkpointed
// (the Kafka sink then writes in transactions). The Kafka output, read
// by kcat over SASL_SSL, and the Redis hashes hold exactly the counts of
// the records. No password and no private key shows anywhere: stdout,
// stderr, the --json summary, explain's output, the Prometheus metrics
// scraped during the run, the files of the checkpoint directory.
func TestRunSecured(t *testing.T) {
	t.Parallel()
	kafkatest.Kcat(t)
	s := startSecured(t, 4, "events", "counts")
	kvar, rvar := setEnv(t, "KAFKA_PASSWORD", kafkaPass), setEnv(t, "REDIS_PASSWORD", aclPass)
	text := securedSQL(s, kvar, rvar, s.pki.CA)

	const n = 3000
	want := outageOracle(n)
	ksec := security.Kafka{Protocol: security.SASLSSL, Mechanism: security.ScramSHA512, Username: "saber", Password: security.NewSecret(kafkaPass), CA: s.pki.CA}
	ctx := context.Background()
	cl, _, err := ksec.Connect(ctx, []string{s.broker}, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	var recs []*kgo.Record
	for i := range n {
		ts, cat, v := outageRecord(i)
		recs = append(recs, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"ts": %d, "cat": %d, "v": %d}`, ts, cat, v)})
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())

	outputs := map[string]string{}
	code, out, errs := cli(t, "explain", "-e", text)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "SASL_SSL, SCRAM-SHA-256 as saber (password ***), CA "+s.pki.CA)
	outputs["explain stdout"] = out

	ckpt := filepath.Join(t.TempDir(), "ckpt")
	// A process of its own, with no --duration: it reads until the
	// scrape has seen every record in both queries, then is interrupted;
	// its last checkpoint, taken at the signal, holds them all. (The
	// source's count is not enough: the merge of the partitions holds
	// their last records until idle_timeout releases them. A fixed
	// duration waited 6 s: at 3 s one run on a loaded machine had 2,997
	// of 3,000 counted.)
	p := startCLI(t, nil, "run", "-e", text, "--workers", "2", "--json", "--checkpoint-dir", ckpt,
		"--checkpoint-interval", "300ms", "--metrics-addr", "127.0.0.1:0")
	client, url := p.metrics(t)
	scrapeUntil(t, client, url, fmt.Sprintf("saber_records_in_total{query=\"to_kafka\"} %d\n", n))
	outputs["metrics"] = scrapeUntil(t, client, url, fmt.Sprintf("saber_records_in_total{query=\"to_redis\"} %d\n", n))
	assert.Contains(t, outputs["metrics"], fmt.Sprintf("saber_source_records_total{source=\"events\"} %d\n", n))
	assert.Contains(t, outputs["metrics"], `saber_sink_down{sink="to_redis"} 0`)
	code = p.stop(t, syscall.SIGINT)
	require.Equal(t, 130, code, p.log())
	outputs["run stdout"], outputs["run stderr"] = p.stdout.String(), p.log()
	var sum runSummary
	require.NoError(t, json.Unmarshal([]byte(lastLine(p.stdout.String())), &sum))
	assert.Equal(t, uint64(n), sum.Tuples)
	assert.True(t, sum.Interrupted)
	require.Len(t, sum.Queries, 2)
	require.NotNil(t, sum.Checkpoints)
	assert.Positive(t, sum.Checkpoints.Taken)

	// The Kafka sink, read by kcat over SASL_SSL (read committed).
	kout := kafkatest.RunKcat(t, nil, append(s.kafka.KcatArgs(t, security.ScramSHA256), "-C", "-b", s.broker, "-t", "counts", "-e", "-q", "-f", "%s\n")...)
	got := map[outageKey]outageAgg{}
	for _, line := range strings.Split(strings.TrimSpace(string(kout)), "\n") {
		var row struct{ Window_start, Cat, N, S int64 }
		require.NoError(t, json.Unmarshal([]byte(line), &row), line)
		k := outageKey{row.Window_start, row.Cat}
		require.NotContains(t, got, k, "one row per window and cat")
		got[k] = outageAgg{row.N, row.S}
	}
	// A checkpointed run's outputs hold the windows the watermark closed:
	// all but the last (8900), which stays open for a restore to go on
	// with (exactly once: Kafka aborts the drain's rows, Redis is not
	// written them).
	closed := maps.Clone(want)
	maps.DeleteFunc(closed, func(k outageKey, _ outageAgg) bool { return k.start == 8900 })
	require.Len(t, closed, len(want)-5)
	assert.Equal(t, closed, got, "kafka sink")

	// The Redis sink, read as the default user.
	rc, err := s.redisServer().Connect(ctx)
	require.NoError(t, err)
	defer rc.Close()
	keys, err := rc.Keys(ctx, "w:*").Result()
	require.NoError(t, err)
	assert.Len(t, keys, len(closed))
	for k, a := range closed {
		h, err := rc.HGetAll(ctx, fmt.Sprintf("w:%d:%d", k.start, k.cat)).Result()
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"n": fmt.Sprint(a.n), "s": fmt.Sprint(a.sum)}, h, "redis hash of %+v", k)
	}
	assertNoSecret(t, s.pki, outputs, ckpt)
}

// TestSecuredRefusedAtOnce: a wrong password, and a server certificate
// that the CA given did not sign, fail each command at once: exit 1
// within seconds (a deadline, far from the minutes an outage is retried),
// the message naming the server and saying authentication or TLS
// failed, and no password in it.
func TestSecuredRefusedAtOnce(t *testing.T) {
	t.Parallel()
	s := startSecured(t, 1, "ad-events", "events", "counts")
	code, _, errs := cli(t, append([]string{"ysb", "setup", "--num-campaigns", "2", "--ads-per-campaign", "2"}, s.redisArgs(s.redisPassFile, s.pki.CA)...)...)
	require.Equal(t, 0, code, errs)
	dir := t.TempDir()
	wrong := passwordFile(t, dir, "wrong", "not-"+kafkaPass)
	otherCA := tlstest.New(t).CA
	kafkaServer, redisServer := "kafka broker "+s.broker, "redis "+s.redis.Addr
	const authFailed, tlsFailed = "authentication failed", "TLS handshake failed"
	kafkaRun := []string{"ysb", "--source", "kafka", "--brokers", s.broker, "--topic", "ad-events", "--workers", "1", "--sink-retry-timeout", "10m"}
	produce := []string{"ysb", "produce", "--brokers", s.broker, "--topic", "ad-events", "--duration", "1m", "--num-campaigns", "2", "--ads-per-campaign", "2"}
	check := []string{"ysb", "check", "--events", filepath.Join(dir, "none.log")}
	require.NoError(t, os.WriteFile(check[3], nil, 0o600))
	for _, tc := range []struct {
		name          string
		args          []string
		server, fails string
	}{
		{"produce, wrong kafka password", append(produce, s.kafkaArgs(wrong, s.pki.CA)...), kafkaServer, authFailed},
		{"produce, wrong kafka CA", append(produce, s.kafkaArgs(s.kafkaPassFile, otherCA)...), kafkaServer, tlsFailed},
		{"setup, wrong redis password", append([]string{"ysb", "setup"}, s.redisURLArgs(wrong, s.pki.CA)...), redisServer, authFailed},
		{"check, wrong redis CA", append(check, s.redisArgs(s.redisPassFile, otherCA)...), redisServer, tlsFailed},
		{"kafka run, wrong kafka password", append(append(kafkaRun, s.kafkaArgs(wrong, s.pki.CA)...), s.redisArgs(s.redisPassFile, s.pki.CA)...), kafkaServer, authFailed},
		{"kafka run, wrong kafka CA", append(append(kafkaRun, s.kafkaArgs(s.kafkaPassFile, otherCA)...), s.redisArgs(s.redisPassFile, s.pki.CA)...), kafkaServer, tlsFailed},
		{"kafka run, wrong redis password", append(append(kafkaRun, s.kafkaArgs(s.kafkaPassFile, s.pki.CA)...), s.redisArgs(wrong, s.pki.CA)...), redisServer, authFailed},
		{"sql run, wrong kafka password", []string{"run", "-e", securedSQL(s, setEnv(t, "WRONG", "not-"+kafkaPass), setEnv(t, "RP", aclPass), s.pki.CA),
			"--workers", "1", "--sink-retry-timeout", "10m"}, kafkaServer, authFailed},
		{"sql run, wrong CA", []string{"run", "-e", securedSQL(s, setEnv(t, "KP", kafkaPass), setEnv(t, "RP", aclPass), otherCA),
			"--workers", "1", "--sink-retry-timeout", "10m"}, kafkaServer, tlsFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			code, out, errs := cli(t, tc.args...)
			took := time.Since(start)
			t.Logf("%v: %s", took, errs)
			assert.Equal(t, 1, code, errs)
			assert.Less(t, took, 15*time.Second, "not at once")
			assert.Contains(t, errs, tc.server+": "+tc.fails, "the server named, the failure said")
			for _, p := range []string{kafkaPass, redisPass, aclPass} {
				assert.NotContains(t, out+errs, p)
			}
		})
	}
}

// TestSecuredFlagsUsage: the flags' errors are usage errors (exit 2)
// that name the flags, and never show a password: one given as a flag's
// value or in --redis's URL is refused before anything is parsed.
func TestSecuredFlagsUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pw := passwordFile(t, dir, "pw", "flag-Pa55-never-shown")
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	produce := []string{"ysb", "produce", "--brokers", "127.0.0.1:1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(produce, "--kafka-sasl-password", "flag-Pa55-never-shown"), "--kafka-sasl-password: a password is never a flag's value"},
		{append(produce, "--kafka-sasl-password=flag-Pa55-never-shown"), "give --kafka-sasl-password-file FILE, or set SABER_HX_KAFKA_PASSWORD"},
		{[]string{"ysb", "setup", "-redis-password=flag-Pa55-never-shown"}, "--redis-password: a password is never a flag's value"},
		{[]string{"ysb", "setup", "--redis", "rediss://u:flag-Pa55-never-shown@127.0.0.1:1"}, "--redis: a password in the URL is refused"},
		{[]string{"ysb", "check", "--events", pw, "--redis", "redis://:flag-Pa55-never-shown@127.0.0.1:1/0"}, "--redis: a password in the URL is refused"},
		{append(produce, "--kafka-security-protocol", "TLS"), "--kafka-security-protocol = 'TLS' is not valid (valid: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"},
		{append(produce, "--kafka-security-protocol", "SASL_SSL", "--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-password-file", pw),
			"--kafka-security-protocol = 'SASL_SSL' needs --kafka-sasl-username"},
		{append(produce, "--kafka-security-protocol", "sasl_plaintext", "--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-username", "u"),
			"--kafka-security-protocol = 'SASL_PLAINTEXT' needs --kafka-sasl-password-file (or SABER_HX_KAFKA_PASSWORD)"},
		{append(produce, "--kafka-sasl-password-file", pw), "option --kafka-sasl-password-file (or SABER_HX_KAFKA_PASSWORD) applies to --kafka-security-protocol 'SASL_PLAINTEXT' or 'SASL_SSL', not 'PLAINTEXT'"},
		{append(produce, "--kafka-ssl-ca", pw), "option --kafka-ssl-ca applies to --kafka-security-protocol 'SSL' or 'SASL_SSL', not 'PLAINTEXT'"},
		{append(produce, "--kafka-security-protocol", "SSL", "--kafka-ssl-endpoint-identification", "off"), "--kafka-ssl-endpoint-identification = 'off' is not valid"},
		{append(produce, "--kafka-security-protocol", "SSL", "--kafka-ssl-cert", pw), "option --kafka-ssl-cert needs --kafka-ssl-key"},
		{append(produce, "--kafka-security-protocol", "SASL_SSL", "--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-username", "u",
			"--kafka-sasl-password-file", empty), "--kafka-sasl-password-file " + empty + ": the file is empty"},
		{append(produce, "--kafka-security-protocol", "SASL_SSL", "--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-username", "u",
			"--kafka-sasl-password-file", filepath.Join(dir, "nope")), "--kafka-sasl-password-file: open " + filepath.Join(dir, "nope")},
		{[]string{"ysb", "setup", "--redis", "127.0.0.1:1", "--redis-ca", pw}, "option --redis-ca applies with --redis-tls = 'true' (or a rediss:// URL)"},
		{[]string{"ysb", "setup", "--redis", "127.0.0.1:1", "--redis-user", "u"}, "option --redis-user needs --redis-password-file (or SABER_HX_REDIS_PASSWORD) (the ACL user's)"},
		{[]string{"ysb", "setup", "--redis", "rediss://a@127.0.0.1:1", "--redis-user", "b"}, "--redis-user: the user is given in --redis's URL already"},
		{[]string{"ysb", "setup", "--redis", "rediss://127.0.0.1:99999", "--redis-password-file", pw}, "option --redis: the port is not a number"},
		{[]string{"ysb", "setup", "--redis", "redis://127.0.0.1:1", "--redis-tls=false", "--redis-cert", pw, "--redis-key", pw},
			"option --redis-cert applies with --redis-tls = 'true'"},
		{[]string{"ysb", "--source", "kafka", "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1", "--kafka-sasl-mechanism", "PLAIN"},
			"option --kafka-sasl-mechanism applies to --kafka-security-protocol"},
		{[]string{"ysb", "--source", "kafka", "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1", "--redis-server-name", "x"},
			"option --redis-server-name applies with --redis-tls = 'true'"},
	} {
		code, out, errs := cli(t, tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errs)
		assert.Contains(t, errs, tc.want, "%v", tc.args)
		assert.NotContains(t, out+errs, "flag-Pa55-never-shown", "%v", tc.args)
	}
	// -h lists the flags, each with its help.
	code, out, _ := cli(t, "ysb", "produce", "-h")
	require.Equal(t, 0, code)
	for _, f := range []string{"kafka-security-protocol", "kafka-sasl-mechanism", "kafka-sasl-username", "kafka-sasl-password-file", "kafka-ssl-ca",
		"kafka-ssl-cert", "kafka-ssl-key", "kafka-ssl-endpoint-identification"} {
		assert.Contains(t, out, "  -"+f+" string\n    \t", f)
	}
	code, out, _ = cli(t, "ysb", "-h")
	require.Equal(t, 0, code)
	for _, f := range []string{"redis", "redis-user", "redis-password-file", "redis-ca", "redis-cert", "redis-key", "redis-server-name",
		"kafka-security-protocol"} {
		assert.Contains(t, out, "  -"+f+" string\n    \t", f)
	}
	assert.Contains(t, out, "  -redis-tls\n    \t")
	assert.Contains(t, out, `docs/operations.md, "Secured connections"`)
}

// TestSecuredFlagsSettings: what the flags make of the settings, the
// passwords from the files or the environment (here a map).
func TestSecuredFlagsSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pw := passwordFile(t, dir, "pw", "file-pass")
	crlf := filepath.Join(dir, "crlf")
	require.NoError(t, os.WriteFile(crlf, []byte("crlf-pass\r\n"), 0o600))
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	kafka := func(e map[string]string, args ...string) (security.Kafka, error) {
		fs := newFlagSet("test", "", io.Discard)
		var f secFlags
		f.register(fs, kafkaFlags, kafkaPasswordEnv)
		require.NoError(t, fs.Parse(args))
		return f.settings(fs, env(e)).Kafka()
	}
	redis := func(e map[string]string, args ...string) (security.Redis, error) {
		fs := newFlagSet("test", "", io.Discard)
		var f secFlags
		f.registerRedis(fs, "redis")
		require.NoError(t, fs.Parse(args))
		return f.settings(fs, env(e)).Redis()
	}

	k, err := kafka(nil)
	require.NoError(t, err)
	assert.Equal(t, security.Kafka{}, k, "no flag: PLAINTEXT")
	k, err = kafka(map[string]string{kafkaPasswordEnv: "env-pass"})
	require.NoError(t, err)
	assert.False(t, k.Password.IsSet(), "the variable is read for SASL_* only")
	k, err = kafka(map[string]string{kafkaPasswordEnv: "env-pass"}, "--kafka-security-protocol", "sasl_ssl", "--kafka-sasl-mechanism", "scram-sha-256",
		"--kafka-sasl-username", "alice", "--kafka-ssl-ca", "/ca.pem", "--kafka-ssl-cert", "/c.pem", "--kafka-ssl-key", "/k.pem",
		"--kafka-ssl-endpoint-identification", "none")
	require.NoError(t, err)
	assert.Equal(t, security.Kafka{Protocol: security.SASLSSL, Mechanism: security.ScramSHA256, Username: "alice", Password: security.NewSecret("env-pass"),
		CA: "/ca.pem", Cert: "/c.pem", Key: "/k.pem", NoHostnameCheck: true}, k)
	k, err = kafka(map[string]string{kafkaPasswordEnv: "env-pass"}, "--kafka-security-protocol", "SASL_PLAINTEXT", "--kafka-sasl-mechanism", "PLAIN",
		"--kafka-sasl-username", "alice", "--kafka-sasl-password-file", crlf)
	require.NoError(t, err)
	assert.Equal(t, "crlf-pass", k.Password.Reveal(), "the file over the variable, its line ending dropped")
	_, err = kafka(map[string]string{kafkaPasswordEnv: ""}, "--kafka-security-protocol", "SASL_PLAINTEXT", "--kafka-sasl-mechanism", "PLAIN",
		"--kafka-sasl-username", "alice")
	require.ErrorContains(t, err, "the environment variable SABER_HX_KAFKA_PASSWORD is set but empty")

	r, err := redis(nil, "--redis", "127.0.0.1:6379")
	require.NoError(t, err)
	assert.Equal(t, security.Redis{Addr: "127.0.0.1:6379"}, r)
	r, err = redis(map[string]string{redisPasswordEnv: "env-pass"}, "--redis", "rediss://alice@db.example:6380/2", "--redis-ca", "/ca.pem",
		"--redis-server-name", "db")
	require.NoError(t, err)
	assert.Equal(t, security.Redis{Addr: "db.example:6380", Username: "alice", Password: security.NewSecret("env-pass"), DB: 2, TLS: true,
		CA: "/ca.pem", ServerName: "db"}, r)
	r, err = redis(map[string]string{redisPasswordEnv: "env-pass"}, "--redis", "127.0.0.1:6379", "--redis-tls", "--redis-user", "bob",
		"--redis-password-file", pw, "--redis-cert", "/c.pem", "--redis-key", "/k.pem")
	require.NoError(t, err)
	assert.Equal(t, security.Redis{Addr: "127.0.0.1:6379", Username: "bob", Password: security.NewSecret("file-pass"), TLS: true,
		Cert: "/c.pem", Key: "/k.pem"}, r)
	assert.Equal(t, "rediss://bob:***@127.0.0.1:6379, client certificate /c.pem", r.String())
	_, err = redis(map[string]string{redisPasswordEnv: ""}, "--redis", "127.0.0.1:6379")
	require.ErrorContains(t, err, "the environment variable SABER_HX_REDIS_PASSWORD is set but empty")
	_, err = redis(nil, "--redis", "redis://127.0.0.1:6379/"+strconv.Itoa(-1))
	require.ErrorContains(t, err, "option --redis: the database (the path) is not a number")
}
