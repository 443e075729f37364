package sql

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hunter = "hunter2-SECRET"

// flinkKafka is a Flink DDL of a kafka source, its options one a line,
// with more after them.
func flinkKafka(more string) string {
	return "CREATE TABLE ev (ts BIGINT, a INT) WITH (\n" +
		"  'connector' = 'kafka',\n" +
		"  'topic' = 'ev',\n" +
		"  'properties.bootstrap.servers' = 'h:9092',\n" +
		more + "\n)"
}

// TestCaretHidesUnknownOptions: the value of an option that no connector
// takes, a Kafka client property such as properties.sasl.jaas.config or a
// misspelt password, is not in the error or its Caret, on the error's
// line or not, the error at its key or elsewhere; the values of the
// options the engine takes still show.
func TestCaretHidesUnknownOptions(t *testing.T) {
	t.Parallel()
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="saber" password="` + hunter + `";`
	const ks = "CREATE SOURCE ev (ts BIGINT, a INT) WITH (connector = 'kafka', topic = 'ev', brokers = 'h:1', "
	for _, tc := range []struct {
		text  string
		msg   string // in the error's message
		shown string // the line Caret shows
	}{
		{
			flinkKafka("  'properties.sasl.jaas.config' = '" + jaas + "'"),
			"unknown option properties.sasl.jaas.config for a kafka source",
			"  'properties.sasl.jaas.config' = ***",
		},
		{
			ks + "properties.sasl.pasword='" + hunter + "')",
			"unknown option properties.sasl.pasword for a kafka source",
			ks + "properties.sasl.pasword=***)",
		},
		{
			ks + "properties.ssl.key.password='" + hunter + "')",
			"unknown option properties.ssl.key.password for a kafka source",
			ks + "properties.ssl.key.password=***)",
		},
		{
			// The error at another option of the line.
			"CREATE SOURCE ev (ts BIGINT, a INT) WITH (connector = 'kafka', topic = 'e v', brokers = 'h:1', 'properties.sasl.jaas.config' = '" + jaas + "', properties.ssl.keystore.key = '" + hunter + "')",
			"topic = 'e v': character ' ' is not allowed",
			"CREATE SOURCE ev (ts BIGINT, a INT) WITH (connector = 'kafka', topic = 'e v', brokers = 'h:1', 'properties.sasl.jaas.config' = ***, properties.ssl.keystore.key = ***)",
		},
		{
			// The '=' forgotten: the parser's error would quote the value.
			flinkKafka("  'properties.sasl.jaas.config' '" + jaas + "'"),
			"may be a secret",
			"  'properties.sasl.jaas.config' ***",
		},
		{
			// The value not closed: the lexer's error.
			flinkKafka("  'properties.sasl.pasword' = '" + hunter),
			"may be a secret",
			"  'properties.sasl.pasword' = ***",
		},
		{
			// Unquoted, two words: the parser's error would quote the second.
			ks + "properties.sasl.pasword = x" + hunter + " " + hunter + ")",
			"may be a secret",
			ks + "properties.sasl.pasword = ***)",
		},
		{
			// A sink's key column (an option taken) is shown.
			"CREATE SINK o AS " + ysbAgg + " WITH (connector = 'kafka', brokers = 'h:1', topic = 'o', key = 'nope', properties.ssl.key.pem = '" + hunter + "')",
			"key = 'nope' is not an output column",
			"CREATE SINK o AS " + ysbAgg + " WITH (connector = 'kafka', brokers = 'h:1', topic = 'o', key = 'nope', properties.ssl.key.pem = ***)",
		},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			t.Parallel()
			text := base + tc.text
			_, err := CompileEnv(text, envOf(nil))
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			c := e.Caret(text)
			assert.Contains(t, e.Msg, tc.msg, c)
			assert.NotContains(t, err.Error(), hunter)
			assert.NotContains(t, c, hunter)
			lines := strings.Split(c, "\n")
			require.Len(t, lines, 3, c)
			assert.Equal(t, "  "+tc.shown, lines[1], c)
		})
	}
}

// TestSecretOption: which options' values are secrets wherever they are
// (Options, Explain, Caret), whose are shown, and whose are hidden in a
// WITH list only (those no connector takes).
func TestSecretOption(t *testing.T) {
	t.Parallel()
	for _, k := range []string{
		"password", "url", "properties.sasl.password", "properties.sasl.jaas.config", "PROPERTIES.SASL.JAAS.CONFIG",
		"properties.ssl.key.password", "properties.ssl.keystore.password", "properties.ssl.truststore.password",
		"properties.ssl.key.pem", "properties.ssl.keystore.key", "properties.ssl.keystore.location", "api_key", "apikey",
		"aws.secret.access.key", "properties.sasl.oauthbearer.token.endpoint.url", "credentials", "db.passwd", "private.pem",
	} {
		assert.True(t, secretOption(k), k)
		assert.True(t, maskedOption(k, false), k)
		assert.True(t, maskedOption(k, true), k)
	}
	for _, k := range []string{"key", "tls.key", "properties.ssl.key.location", "topic", "connector", "brokers", "properties.sasl.username", "fields"} {
		assert.False(t, secretOption(k), k)
		assert.False(t, maskedOption(k, true), k)
	}
	for _, k := range []string{"properties.sasl.pasword", "properties.client.id", "scan.topic-partition-discovery.interval"} {
		assert.False(t, secretOption(k), k)
		assert.True(t, maskedOption(k, true), k)
	}
}

// TestKnownOptionsTaken: every option that a source, table or sink takes
// (the valid: list of its error for an unknown option) is known, so that
// Caret shows its value where it is not a secret.
func TestKnownOptionsTaken(t *testing.T) {
	t.Parallel()
	validList := regexp.MustCompile(`\(valid: ([^)]*)\)`)
	for _, text := range []string{
		"CREATE SOURCE q (ts BIGINT) WITH (connector = 'stdin', zz = '1')",
		"CREATE SOURCE q (ts BIGINT) WITH (connector = 'file', path = 'x', zz = '1')",
		"CREATE SOURCE q (ts BIGINT) WITH (connector = 'go', zz = '1')",
		"CREATE SOURCE q (ts BIGINT) WITH (connector = 'generator', workload = 'ysb', zz = '1')",
		"CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', brokers = 'h:1', topic = 't', zz = '1')",
		"CREATE TABLE q (ts BIGINT) WITH (connector = 'file', path = 'x', zz = '1')",
		"CREATE SINK o AS " + ysbAgg + " WITH (connector = 'file', path = 'x', zz = '1')",
		"CREATE SINK o AS " + ysbAgg + " WITH (connector = 'kafka', brokers = 'h:1', topic = 't', zz = '1')",
		"CREATE SINK o AS " + ysbAgg + " WITH (connector = 'redis', addr = 'h:1', key = '{campaign_id}', zz = '1')",
	} {
		_, err := CompileEnv(base+text, envOf(nil))
		require.Error(t, err, text)
		m := validList.FindStringSubmatch(err.Error())
		require.NotNil(t, m, err.Error())
		for _, k := range strings.Split(m[1], ", ") {
			assert.True(t, knownOption(k), "%s: %s", text, k)
		}
	}
	for _, k := range []string{"seed", "nexmark.table.type", "table"} {
		assert.True(t, knownOption(k), k)
	}
}

// TestCaretMasksAValueOnTheNextLine: a secret's value that begins on the
// line after "key =", its string not closed, is masked on that line,
// which is the one the lexer's error shows.
func TestCaretMasksAValueOnTheNextLine(t *testing.T) {
	for _, kv := range []string{"password =\n  'hunter2-SECRET", "'properties.sasl.jaas.config' =\n  'x password=\"hunter2-SECRET\";"} {
		text := "CREATE SOURCE ev (ts BIGINT, a INT) WITH (connector = 'kafka', topic = 'ev', brokers = 'h:1',\n  " + kv + "\n)"
		_, err := CompileEnv(text, func(string) (string, bool) { return "", false })
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.NotContains(t, e.Caret(text), "hunter2", kv)
		assert.NotContains(t, e.Error(), "hunter2", kv)
	}
}

// TestCaretShowsAQuery: a string compared in a query is no option's key:
// the query around it stays visible, and its syntax errors say what they
// are.
func TestCaretShowsAQuery(t *testing.T) {
	const src = "CREATE SOURCE e (ts BIGINT, kind VARCHAR, price BIGINT) WITH (connector = 'stdin', format = 'json');\n"
	for _, q := range []string{"SELECT kind FROM e WHERE 'bid' = kind AND pricee > 10", "SELECT kind FROM e WHERE 'bid' = kind AND price > > 10"} {
		_, err := CompileEnv(src+q, func(string) (string, bool) { return "", false })
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.NotContains(t, e.Caret(src+q), "***", q)
		assert.NotContains(t, e.Msg, "secret", q)
	}
}

// TestRedisAddrWithURLHidesPassword: a Redis URL given in addr (as the
// command line's --redis takes one, or '${REDIS_URL}' from the
// environment) is refused, and neither the error nor its caret line
// shows the password in it.
func TestRedisAddrWithURLHidesPassword(t *testing.T) {
	for _, tc := range []struct {
		text string
		env  map[string]string
	}{
		{base + "CREATE SINK o AS " + ysbAgg + " WITH (connector = 'redis', key = 'k:{window_start}', addr = 'redis://:" + pw + "@cache:6379')", nil},
		{base + "CREATE SINK o AS " + ysbAgg + " WITH (connector = 'redis', key = 'k:{window_start}', addr = '${REDIS_URL}')",
			map[string]string{"REDIS_URL": "rediss://writer:" + pw + "@cache:6380/0"}},
	} {
		_, err := CompileEnv(tc.text, envOf(tc.env))
		require.Error(t, err)
		e := err.(*Error)
		assert.Contains(t, e.Error(), "a redis:// or rediss:// URL goes in url")
		assert.NotContains(t, e.Error(), pw)
		assert.NotContains(t, e.Caret(tc.text), pw)
	}
}
