package sql

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/security"
)

const pw = "Sql-Pa55-never-shown"

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func compileEnv(t *testing.T, text string, env map[string]string) *Program {
	t.Helper()
	p, err := CompileEnv(text, envOf(env))
	if err != nil {
		if e, ok := err.(*Error); ok {
			t.Fatal(e.Caret(text))
		}
		t.Fatal(err)
	}
	return p
}

// noSecret fails t where the password shows in the program's echoes:
// Options, Explain, a JSON dump of the sources and sinks.
func noSecret(t *testing.T, p *Program) {
	t.Helper()
	var outs []string
	outs = append(outs, p.Explain())
	for _, s := range p.Sources {
		outs = append(outs, fmt.Sprint(s.Options), fmt.Sprintf("%+v", *s))
	}
	for _, q := range p.Queries {
		if q.Sink != nil {
			outs = append(outs, fmt.Sprint(q.Sink.Options), fmt.Sprintf("%+v %#v", *q.Sink, *q.Sink))
			j, err := json.Marshal(q.Sink)
			require.NoError(t, err)
			outs = append(outs, string(j))
		}
	}
	for _, o := range outs {
		assert.NotContains(t, o, pw)
	}
}

// TestKafkaSecurityOptions: the RisingWave options of a kafka source and
// sink, keys quoted or not, values from the environment, read into
// KafkaSecurity; the password never echoed (Options has ***).
func TestKafkaSecurityOptions(t *testing.T) {
	t.Parallel()
	text := `CREATE SOURCE ev (ts BIGINT, a INT) WITH (connector = 'kafka', brokers = '${BOOTSTRAP_SERVERS}', topic = 'ev',
		'properties.security.protocol' = 'SASL_SSL', properties.sasl.mechanism = 'SCRAM-SHA-512',
		"properties.sasl.username" = 'alice', properties.sasl.password = '${KAFKA_PASSWORD}',
		properties.ssl.ca.location = '/etc/kafka/ca.pem', properties.ssl.endpoint.identification.algorithm = 'none');
		CREATE SINK o AS SELECT * FROM ev WITH (connector = 'kafka', brokers = 'k:9093', topic = 'out',
		properties.security.protocol = 'ssl', properties.ssl.certificate.location = '/c.pem', properties.ssl.key.location = '/k.pem')`
	p := compileEnv(t, text, map[string]string{"BOOTSTRAP_SERVERS": "b1:9093,b2:9093", "KAFKA_PASSWORD": pw})
	s := p.Source("ev")
	assert.Equal(t, []string{"b1:9093", "b2:9093"}, s.Brokers)
	assert.Equal(t, security.Kafka{Protocol: security.SASLSSL, Mechanism: security.ScramSHA512, Username: "alice",
		Password: security.NewSecret(pw), CA: "/etc/kafka/ca.pem", NoHostnameCheck: true}, s.KafkaSecurity)
	assert.Equal(t, "***", s.Options["properties.sasl.password"])
	assert.Equal(t, "b1:9093,b2:9093", s.Options["brokers"])
	sk := p.Query("o").Sink
	assert.Equal(t, security.Kafka{Protocol: security.SSL, Cert: "/c.pem", Key: "/k.pem"}, sk.KafkaSecurity)
	out := p.Explain()
	assert.Contains(t, out, "source ev (line 1): kafka topic ev at b1:9093,b2:9093 (SASL_SSL, SCRAM-SHA-512 as alice (password ***), CA /etc/kafka/ca.pem, broker names not checked), format json")
	assert.Contains(t, out, "  sink: kafka topic out at k:9093 (SSL, the system's CAs, client certificate /c.pem), format json\n")
	noSecret(t, p)

	p = mustCompile(t, "CREATE SOURCE ev (ts BIGINT) WITH (connector = 'kafka', brokers = 'h:1', topic = 't'); SELECT * FROM ev")
	assert.False(t, p.Source("ev").KafkaSecurity.Secured())
	assert.Contains(t, p.Explain(), "kafka topic t at h:1 (PLAINTEXT)")
}

// TestRedisSecurityOptions: a redis sink's server from url (redis://,
// rediss://) or addr with username, password and the tls options; the
// password shown as *** in Options and Explain.
func TestRedisSecurityOptions(t *testing.T) {
	t.Parallel()
	sink := func(opts string) string {
		return base + "CREATE SINK o AS " + ysbAgg + " WITH (connector = 'redis', key = 'k:{window_start}:{campaign_id}', " + opts + ")"
	}
	p := compileEnv(t, sink("url = 'rediss://writer:${REDIS_PASSWORD}@cache:6380/2', tls.ca = '/ca.pem', tls.server_name = 'cache.internal'"),
		map[string]string{"REDIS_PASSWORD": pw})
	sk := p.Query("o").Sink
	assert.Equal(t, security.Redis{Addr: "cache:6380", Username: "writer", Password: security.NewSecret(pw), DB: 2, TLS: true,
		CA: "/ca.pem", ServerName: "cache.internal"}, sk.Redis)
	assert.Equal(t, "cache:6380", sk.Addr)
	assert.Equal(t, "rediss://writer:***@cache:6380/2", sk.Options["url"])
	assert.Contains(t, p.Explain(), "  sink: redis rediss://writer:***@cache:6380/2, CA /ca.pem, server name cache.internal, layout hash\n")
	noSecret(t, p)

	p = compileEnv(t, sink("addr = 'h:6379', 'username' = 'app', password = '"+pw+"', tls = 'true', tls.cert = '/c', tls.key = '/k'"), nil)
	sk = p.Query("o").Sink
	assert.Equal(t, security.Redis{Addr: "h:6379", Username: "app", Password: security.NewSecret(pw), TLS: true, Cert: "/c", Key: "/k"}, sk.Redis)
	assert.Equal(t, "***", sk.Options["password"])
	noSecret(t, p)

	p = mustCompile(t, sink("addr = 'h:6379'"))
	assert.Equal(t, security.Redis{Addr: "h:6379"}, p.Query("o").Sink.Redis)
	assert.Contains(t, p.Explain(), "  sink: redis redis://h:6379, layout hash\n")
}

// TestSecurityOptionErrors: each inconsistent option is an error at the
// option (its value, or its key where its being there is the fault), and
// never shows the password.
func TestSecurityOptionErrors(t *testing.T) {
	t.Parallel()
	const ks = "CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', brokers = 'h:1', topic = 't', "
	rs := "CREATE SINK o AS " + ysbAgg + " WITH (connector = 'redis', key = 'k:{window_start}', "
	for _, tc := range []struct {
		text string
		at   string // the error is at the first occurrence of this text
		msg  string
	}{
		{ks + "properties.security.protocol = 'TLS')", "'TLS'", "properties.security.protocol = 'TLS' is not valid (valid: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"},
		{ks + "properties.sasl.mechanism = 'PLAIN')", "properties.sasl.mechanism", "option properties.sasl.mechanism applies to properties.security.protocol 'SASL_PLAINTEXT' or 'SASL_SSL', not 'PLAINTEXT'"},
		{ks + "properties.security.protocol = 'SASL_SSL', properties.sasl.username = 'u', properties.sasl.password = '" + pw + "')", "'SASL_SSL'", "needs properties.sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"},
		{ks + "properties.security.protocol = 'SASL_SSL', properties.sasl.mechanism = 'PLAIN', properties.sasl.username = 'u')", "'SASL_SSL'", "needs properties.sasl.password"},
		{ks + "properties.security.protocol = 'SASL_PLAINTEXT', properties.sasl.mechanism = 'PLAIN', properties.sasl.username = 'u', properties.sasl.password = '" + pw + "', properties.ssl.ca.location = '/ca')", "properties.ssl.ca.location", "applies to properties.security.protocol 'SSL' or 'SASL_SSL', not 'SASL_PLAINTEXT'"},
		{ks + "properties.security.protocol = 'SSL', properties.ssl.key.location = '/k')", "properties.ssl.key.location", "needs properties.ssl.certificate.location"},
		{ks + "properties.security.protocol = 'SSL', properties.ssl.endpoint.identification.algorithm = 'http')", "'http'", "valid: https, the default, or none"},
		{ks + "properties.sasl.password = '${NOPE}')", "${NOPE}", "option properties.sasl.password: environment variable NOPE is not set"},
		{ks + "properties.sasl.password = 'ab${')", "${')", "option properties.sasl.password: '${' is not closed"},
		{rs + "layout = 'hash')", "WITH (connector = 'redis'", "needs the option addr (the Redis server, host:port) or url"},
		{rs + "addr = 'h:1', url = 'redis://h:1')", "url =", "give either addr or url, not both"},
		{rs + "url = 'http://u:" + pw + "@h:1')", "'http://", `option url: the scheme is "http"`},
		{rs + "url = 'redis://u:" + pw + "@h:x')", "'redis://", "option url: not a URL of the form redis://[user[:password]@]host[:port][/db]"},
		{rs + "url = 'redis://:" + pw + "')", "'redis://", "option url: not a URL of the form"},
		{rs + "url = 'redis://:" + pw + "@:1')", "'redis://", "option url: no host"},
		{rs + "addr = 'h:1', tls.ca = '/ca')", "tls.ca", "option tls.ca applies with tls = 'true' (or a rediss:// URL)"},
		{rs + "addr = 'h:1', tls = 'on')", "'on'", "tls = 'on' is not valid (valid: true, false)"},
		{rs + "addr = 'h:1', username = 'u')", "username", "option username needs password"},
		{rs + "addr = 'h:1', password = '')", "''", "option password is empty"},
		{rs + "url = 'redis://:" + pw + "@h:1', password = '" + pw + "')", "password =", "the password is given in url already"},
		{rs + "addr = 'nope', password = '" + pw + "')", "'nope'", "addr = 'nope' is not host:port"},
		{"CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', password = '" + pw + "')", "password", "unknown option password for a stdin source"},
	} {
		text := base + tc.text
		t.Run(tc.msg, func(t *testing.T) {
			t.Parallel()
			_, err := CompileEnv(text, envOf(nil))
			require.Error(t, err)
			e := err.(*Error)
			assert.Contains(t, e.Msg, tc.msg, e.Caret(text))
			assert.Equal(t, strings.Index(text, tc.at), e.Offset, e.Caret(text))
			checkErrorPosition(t, text, e)
			assert.NotContains(t, e.Error(), pw)
			assert.NotContains(t, e.Caret(text), pw)
		})
	}
}

// TestExpandOptions: ${NAME} in any option value is the environment's
// value; $${ is a literal ${; a variable not set is an error at its
// placeholder naming it and the option; values are not expanded twice.
func TestExpandOptions(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TOPIC": "ad-events", "HOST": "kafka.internal", "G": "g-${TOPIC}"}
	p := compileEnv(t, "CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', brokers = '${HOST}:9092,${HOST}:9093', topic = '${TOPIC}', group = '${G}-$${G}'); SELECT * FROM q", env)
	s := p.Source("q")
	assert.Equal(t, []string{"kafka.internal:9092", "kafka.internal:9093"}, s.Brokers)
	assert.Equal(t, "ad-events", s.Topic)
	assert.Equal(t, "g-${TOPIC}-${G}", s.Group)

	for _, tc := range []struct {
		text, at, msg string
	}{
		{"CREATE SOURCE q (ts BIGINT) WITH (connector = 'file', path = '/data/${MISSING}.csv', format = 'csv')", "${MISSING}", "option path: environment variable MISSING is not set"},
		{"CREATE SOURCE q (ts BIGINT) WITH (connector = 'file', path = 'it''s/${MISSING}')", "'it''s", "option path: environment variable MISSING is not set"},
		{"CREATE SOURCE q (ts BIGINT) WITH (connector = 'file', path = '${1X}')", "${1X}", "not an environment variable's name"},
		// A value expanded: positions within it are the value's.
		{"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', brokers = '${HOST}', topic = 't')", "'${HOST}'", "broker 'kafka.internal' is not host:port"},
	} {
		_, err := CompileEnv(tc.text, envOf(env))
		require.Error(t, err, tc.text)
		e := err.(*Error)
		assert.Contains(t, e.Msg, tc.msg)
		assert.Equal(t, strings.Index(tc.text, tc.at), e.Offset, e.Caret(tc.text))
		checkErrorPosition(t, tc.text, e)
	}
}

// TestCaretHidesSecrets: the line Caret shows has the password values on
// it as ***, the caret still under the character at fault (before, on or
// after the secret), also where the text does not lex or the password is
// written without quotes.
func TestCaretHidesSecrets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text  string
		shown string // the line as Caret shows it
		under string // what the caret points at, on the shown line
	}{
		{
			"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', brokers = 'h:1', properties.sasl.password = 'p''w" + pw + "', topic = 'x y')",
			"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', brokers = 'h:1', properties.sasl.password = ***, topic = 'x y')",
			" y')",
		},
		{
			"CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', 'password' = '" + pw + "')",
			"CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', 'password' = ***)",
			"'password' = ***)",
		},
		{
			"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', brokers = 'h:1', topic = 't', properties.sasl.password = '')",
			"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', brokers = 'h:1', topic = 't', properties.sasl.password = ***)",
			"***)",
		},
		{
			"CREATE SINK o AS SELECT a FROM nowhere WITH (connector = 'redis', url = 'redis://:" + pw + "@h:1', password = '" + pw + "')",
			"CREATE SINK o AS SELECT a FROM nowhere WITH (connector = 'redis', url = ***, password = ***)",
			"nowhere WITH",
		},
		{
			"SELECT * FROM s WITH (password = '" + pw + "\nmore text",
			"SELECT * FROM s WITH (password = ***",
			"***",
		},
		{
			"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', brokers = 'h:1', topic = 't', properties.sasl.password = " + pw + ")",
			"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', brokers = 'h:1', topic = 't', properties.sasl.password = ***)",
			"***)",
		},
	} {
		_, err := CompileEnv(tc.text, envOf(nil))
		require.Error(t, err, tc.text)
		c := err.(*Error).Caret(tc.text)
		assert.NotContains(t, c, pw)
		lines := strings.Split(c, "\n")
		require.Len(t, lines, 3, c)
		assert.Equal(t, "  "+tc.shown, lines[1], c)
		at := strings.Index(lines[2], "^")
		require.Positive(t, at, c)
		assert.True(t, strings.HasPrefix(lines[1][at:], tc.under), "%s\n the caret is under %q", c, lines[1][at:])
	}
}

// secretContexts are texts that end where a password begins, and what
// must follow it for it to be the password.
var secretContexts = []struct{ pre, post string }{
	{"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', brokers = 'h:1', topic = 't', properties.security.protocol = 'SASL_SSL', properties.sasl.mechanism = 'PLAIN', properties.sasl.username = 'u', properties.sasl.password = '", ""},
	{"CREATE SINK o AS " + ysbAgg + " WITH (connector = 'redis', key = '{campaign_id}', url = 'rediss://u:", "@"},
	{"CREATE SINK o AS " + ysbAgg + " WITH (connector = 'redis', key = '{campaign_id}', url = 'redis://:", "@"},
	{"CREATE SINK o AS " + ysbAgg + " WITH (connector = 'redis', key = '{campaign_id}', url = 'redis://:", ""}, // no '@': no host, an error that quotes nothing
	{"CREATE SINK o AS " + ysbAgg + " WITH (connector = 'redis', addr = 'h:1', key = '{campaign_id}', password = '", ""},
	{"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', 'properties.sasl.password' = ", ""},
	{"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', properties.sasl.password '", ""},
	{"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', properties.sasl.password = /* c */ '", ""},
	{"SELECT * FROM s WITH (password = '", ""},
}

// FuzzSecretsNeverShown: whatever follows it, and whatever it is (six
// printable characters or more, none elsewhere in the text), a password
// written where one goes is not in the error, its Caret, Explain or the
// options.
func FuzzSecretsNeverShown(f *testing.F) {
	for i, post := range []string{"'); SELECT * FROM q", "@h:1/0')", "@h:1')", "')", "', tls = 'maybe')", ")", "' topic = 't')", "'", ""} {
		f.Add(uint8(i), "s3cr3t-pass", post)
	}
	f.Fuzz(func(t *testing.T, which uint8, secret, post string) {
		c := secretContexts[int(which)%len(secretContexts)]
		if len(secret) < 6 || strings.ContainsAny(secret, "'@:/%?#$,);-*") || !isPrintable(secret) ||
			!strings.HasPrefix(post, c.post) || strings.Contains(base+c.pre+"\x00"+post, secret) {
			return
		}
		text := base + c.pre + secret + post
		p, err := CompileEnv(text, envOf(nil))
		var outs []string
		if err != nil {
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("%T: %v", err, err)
			}
			outs = append(outs, e.Error(), e.Caret(text))
		} else {
			outs = append(outs, p.Explain())
			for _, s := range p.Sources {
				outs = append(outs, fmt.Sprintf("%v %+v", s.Options, *s))
			}
			for _, q := range p.Queries {
				if q.Sink != nil {
					outs = append(outs, fmt.Sprintf("%v %+v", q.Sink.Options, *q.Sink))
				}
			}
		}
		for _, o := range outs {
			if strings.Contains(o, secret) {
				t.Fatalf("the secret %q shows in %q", secret, o)
			}
		}
	})
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < 0x21 || r > 0x7e {
			return false
		}
	}
	return true
}
