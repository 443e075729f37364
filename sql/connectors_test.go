package sql

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ysbAgg = "SELECT window_start, u AS campaign_id, COUNT(*) AS n, SUM(a) AS total FROM TUMBLE(s, ts, INTERVAL '10' SECOND) GROUP BY u"

func TestKafkaSourceOptions(t *testing.T) {
	p := mustCompile(t, `CREATE SOURCE ev (ts BIGINT, u UUID, a INT)
		WITH (connector = 'kafka', brokers = 'h1:9092, h2:9093', topic = 'ad-events.v1', group = 'saber',
		      start = 'LATEST', format = 'json', idle_timeout = '250ms', on_error = 'skip', time_unit = 'us');
		SELECT * FROM ev`)
	s := p.Source("ev")
	require.NotNil(t, s)
	assert.Equal(t, "kafka", s.Connector)
	assert.Equal(t, []string{"h1:9092", "h2:9093"}, s.Brokers)
	assert.Equal(t, "ad-events.v1", s.Topic)
	assert.Equal(t, "saber", s.Group)
	assert.Equal(t, "latest", s.Start)
	assert.Equal(t, "json", s.Format)
	assert.Equal(t, 250*time.Millisecond, s.IdleTimeout)
	assert.Equal(t, "skip", s.OnError)
	assert.Equal(t, "us", s.TimeUnit)
	assert.Equal(t, "h1:9092, h2:9093", s.Options["brokers"], "every option is kept as written")
	assert.Equal(t, "ts", s.Schema.Attrs[0].Name, "json: the compiler lays the tuple out, event time first")

	// The defaults: json, earliest, no group, 5s.
	p = mustCompile(t, "CREATE SOURCE ev (ts BIGINT, a INT) WITH (connector = 'kafka', brokers = 'localhost:9092', topic = 't'); SELECT * FROM ev")
	s = p.Source("ev")
	assert.Equal(t, "json", s.Format)
	assert.Equal(t, "earliest", s.Start)
	assert.Equal(t, "", s.Group)
	assert.Equal(t, DefaultIdleTimeout, s.IdleTimeout)
	assert.Equal(t, "fail", s.OnError)
	assert.Zero(t, s.Fetchers, "one consumer client")
	assert.Equal(t, "ms", s.TimeUnit)
	assert.Equal(t, "read_committed", s.IsolationLevel)
	p = mustCompile(t, "CREATE SOURCE ev (ts BIGINT, a INT) WITH (connector = 'kafka', brokers = 'localhost:9092', topic = 't', isolation_level = 'READ_UNCOMMITTED'); SELECT * FROM ev")
	assert.Equal(t, "read_uncommitted", p.Source("ev").IsolationLevel)
	p = mustCompile(t, "CREATE SOURCE ev (ts BIGINT, a INT) WITH (connector = 'kafka', brokers = 'localhost:9092', topic = 't', fetchers = '4'); SELECT * FROM ev")
	assert.Equal(t, 4, p.Source("ev").Fetchers)

	// binary: as declared, tuple_size allowed.
	p = mustCompile(t, "CREATE SOURCE ev (ts BIGINT, a INT) WITH (connector = 'kafka', brokers = '[::1]:9092', topic = 't', format = 'binary', tuple_size = '16'); SELECT * FROM ev")
	s = p.Source("ev")
	assert.Equal(t, 16, s.Schema.TupleSize)
	assert.Equal(t, []string{"[::1]:9092"}, s.Brokers)
}

func TestKafkaSinkOptions(t *testing.T) {
	p := mustCompile(t, base+"CREATE SINK o AS "+ysbAgg+" WITH (connector = 'kafka', brokers = 'h:9092', topic = 'out', format = 'csv', key = 'campaign_id')")
	sk := p.Queries[0].Sink
	assert.Equal(t, "kafka", sk.Connector)
	assert.Equal(t, []string{"h:9092"}, sk.Brokers)
	assert.Equal(t, "out", sk.Topic)
	assert.Equal(t, "csv", sk.Format)
	assert.Equal(t, "campaign_id", sk.Key)
	assert.Equal(t, "campaign_id", sk.Options["key"])

	p = mustCompile(t, base+"CREATE SINK o AS SELECT a FROM s WITH (connector = 'kafka', brokers = 'h:9092', topic = 'out')")
	sk = p.Queries[0].Sink
	assert.Equal(t, "json", sk.Format, "kafka's default format")
	assert.Equal(t, "", sk.Key)
}

func TestRedisSinkOptions(t *testing.T) {
	p := mustCompile(t, base+"CREATE SINK o AS "+ysbAgg+" WITH (connector = 'redis', addr = 'localhost:6379', key = 'cm1:{window_start}:{campaign_id}', flush = '100ms')")
	sk := p.Queries[0].Sink
	assert.Equal(t, "redis", sk.Connector)
	assert.Equal(t, "localhost:6379", sk.Addr)
	assert.Equal(t, "hash", sk.Layout)
	assert.Equal(t, "cm1:{window_start}:{campaign_id}", sk.KeyTemplate)
	assert.Equal(t, []string{"n", "total"}, sk.Fields, "by default every column the key does not name")
	assert.Equal(t, 100*time.Millisecond, sk.Flush)
	assert.Equal(t, "", sk.Format)

	p = mustCompile(t, base+"CREATE SINK o AS "+ysbAgg+" WITH (connector = 'redis', addr = 'h:1', key = 'x:{{{campaign_id}}}', fields = 'total, window_start')")
	sk = p.Queries[0].Sink
	assert.Equal(t, []string{"total", "window_start"}, sk.Fields)
	assert.Equal(t, DefaultRedisFlush, sk.Flush)

	// ysb: the count is seen_count where there is one, else the first aggregate.
	p = mustCompile(t, base+"CREATE SINK o AS "+ysbAgg+" WITH (connector = 'redis', addr = 'h:1', layout = 'ysb')")
	sk = p.Queries[0].Sink
	assert.Equal(t, "ysb", sk.Layout)
	assert.Equal(t, []string{"n"}, sk.Fields)
	p = mustCompile(t, base+"CREATE SINK o AS SELECT window_start, SUM(a) AS s1, u AS campaign_id, COUNT(*) AS seen_count FROM TUMBLE(s, ts, INTERVAL '10' SECOND) GROUP BY u WITH (connector = 'redis', addr = 'h:1', layout = 'ysb')")
	assert.Equal(t, []string{"seen_count"}, p.Queries[0].Sink.Fields)
}

// TestConnectorErrors: each bad kafka or redis option is an error at it
// (the statements are on line 3 unless the case starts with "!").
func TestConnectorErrors(t *testing.T) {
	const ks = "!CREATE SOURCE q (ts BIGINT) WITH (connector = 'kafka', "
	for _, tc := range []struct {
		text      string
		line, col int
		msg       string
	}{
		{ks + "topic = 'x')", 1, 29, "a kafka source needs the option brokers (the Kafka brokers, host:port separated by commas)"},
		{ks + "brokers = 'h:9092')", 1, 29, "a kafka source needs the option topic (the Kafka topic)"},
		{ks + "brokers = 'h:9092, nope', topic = 't')", 1, 75, "brokers = 'h:9092, nope': broker 'nope' is not host:port"},
		{ks + "brokers = 'h:9092,,h2:1', topic = 't')", 1, 74, "brokers = 'h:9092,,h2:1': an empty broker"},
		{ks + "brokers = 'h:99999', topic = 't')", 1, 67, "broker 'h:99999' has port '99999', want 1 to 65535"},
		{ks + "brokers = ':9092', topic = 't')", 1, 67, "broker ':9092' has no host"},
		{ks + "brokers = '', topic = 't')", 1, 66, "option brokers is empty"},
		{ks + "brokers = 'h:1', topic = 'a b')", 1, 83, "topic = 'a b': character ' ' is not allowed in a Kafka topic name"},
		{ks + "brokers = 'h:1', topic = '..')", 1, 81, "topic = '..': not a Kafka topic name"},
		{ks + "brokers = 'h:1', topic = 't', group = '')", 1, 94, "option group is empty"},
		{ks + "brokers = 'h:1', topic = 't', start = 'middle')", 1, 94, "start = 'middle' is not valid for a kafka source (valid: earliest, latest)"},
		{ks + "brokers = 'h:1', topic = 't', format = 'avro')", 1, 95, "format = 'avro' is not valid for a kafka source (valid: json, csv, binary)"},
		{ks + "brokers = 'h:1', topic = 't', idle_timeout = '5')", 1, 101, "idle_timeout = '5': want a positive duration"},
		{ks + "brokers = 'h:1', topic = 't', idle_timeout = '-1s')", 1, 101, "idle_timeout = '-1s': want a positive duration"},
		{ks + "brokers = 'h:1', topic = 't', header = 'true')", 1, 86, "option header does not apply to a kafka source"},
		{ks + "brokers = 'h:1', topic = 't', fetchers = '0')", 1, 97, "fetchers = '0': must be an integer in [1, 64]"},
		{ks + "brokers = 'h:1', topic = 't', group = 'g', fetchers = '2')", 1, 99, "option fetchers does not apply with a group"},
		{ks + "brokers = 'h:1', topic = 't', tuple_size = '8')", 1, 86, "option tuple_size applies to format = 'binary'; for 'json'"},
		{ks + "brokers = 'h:1', topic = 't', isolation_level = 'serializable')", 1, 104, "isolation_level = 'serializable' is not valid for a kafka source (valid: read_committed, read_uncommitted)"},
		{ks + "brokers = 'h:1', topic = 't', path = 'x')", 1, 86, "unknown option path for a kafka source (valid: connector, brokers, topic, group, start, format, tuple_size, idle_timeout, fetchers, on_error, time_unit, isolation_level, properties.bootstrap.servers, properties.group.id, scan.startup.mode, properties.auto.offset.reset, properties.isolation.level, properties.security.protocol, properties.sasl.mechanism, properties.sasl.username, properties.sasl.password, properties.ssl.ca.location, properties.ssl.certificate.location, properties.ssl.key.location, properties.ssl.endpoint.identification.algorithm)"},
		{ks + "brokers = 'h:1', topic = 't', on_error = 'x')", 1, 97, "on_error = 'x' is not valid for a kafka source (valid: fail, skip)"},
		{ks + "brokers = 'h:1', topic = 't', time_unit = 'min')", 1, 98, "time_unit = 'min' is not valid for a kafka source"},

		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'kafka', topic = 't')", 3, 34, "a kafka sink needs the option brokers"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'kafka', brokers = 'h:1')", 3, 34, "a kafka sink needs the option topic"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'kafka', brokers = 'h:1', topic = 't', key = 'b')", 3, 97, "key = 'b' is not an output column (valid: a)"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'kafka', brokers = 'h:1', topic = 't', format = 'binary')", 3, 100, "format = 'binary' is not valid for a kafka sink (valid: json, csv)"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'kafka', brokers = 'h:1', topic = 't', path = 'x')", 3, 91, "unknown option path for a kafka sink (valid: connector, brokers, topic, format, key, properties.bootstrap.servers, properties.security.protocol, properties.sasl.mechanism, properties.sasl.username, properties.sasl.password, properties.ssl.ca.location, properties.ssl.certificate.location, properties.ssl.key.location, properties.ssl.endpoint.identification.algorithm)"},

		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis')", 3, 34, "a redis sink needs the option addr (the Redis server, host:port)"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis', addr = 'localhost')", 3, 68, "addr = 'localhost' is not host:port"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis', addr = 'h:1')", 3, 34, "a redis sink needs the option key (a template over the output columns"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis', addr = 'h:1', key = 'x:{b}')", 3, 84, "key = 'x:{b}': {b} is not an output column (valid: a)"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis', addr = 'h:1', key = 'x:{a')", 3, 84, "'{' is not closed by '}'"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis', addr = 'h:1', key = 'x:}a')", 3, 84, "'}' without '{'"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis', addr = 'h:1', key = 'x:{}')", 3, 84, "{} names no column"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis', addr = 'h:1', key = 'plain')", 3, 82, "key = 'plain': names no column"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis', addr = 'h:1', key = 'x:{a}')", 3, 81, "names every output column: the hash would have no fields"},
		{"CREATE SINK o AS SELECT a, b FROM s WITH (connector = 'redis', addr = 'h:1', key = 'x:{a}', fields = 'b, zz')", 3, 106, "fields = 'b, zz': 'zz' is not an output column (valid: a, b)"},
		{"CREATE SINK o AS SELECT a, b FROM s WITH (connector = 'redis', addr = 'h:1', key = 'x:{a}', fields = 'b,b')", 3, 105, "'b' given twice"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis', addr = 'h:1', layout = 'list', key = 'x')", 3, 84, "layout = 'list' is not valid for a redis sink (valid: hash, ysb)"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis', addr = 'h:1', key = 'k{a}', flush = 'soon')", 3, 97, "flush = 'soon': want a positive duration"},
		{"CREATE SINK o AS SELECT a, b FROM s WITH (connector = 'redis', addr = 'h:1', key = 'k{a}', format = 'csv')", 3, 92, "unknown option format for a redis sink (valid: connector, addr, layout, key, fields, flush, url, username, password, tls, tls.ca, tls.cert, tls.key, tls.server_name)"},
		{"CREATE SINK o AS SELECT a FROM s WITH (connector = 'redis', addr = 'h:1', layout = 'ysb')", 3, 34, "layout 'ysb' needs an output column campaign_id (a UUID); the columns are a"},
		{"CREATE SINK o AS " + ysbAgg + " WITH (connector = 'redis', addr = 'h:1', layout = 'ysb', key = 'x')", 3, 197, "option key applies to layout = 'hash'"},
		{"CREATE SINK o AS " + ysbAgg + " WITH (connector = 'redis', addr = 'h:1', layout = 'ysb', fields = 'n')", 3, 197, "option fields applies to layout = 'hash'"},
		{"CREATE SINK o AS SELECT window_start, a AS campaign_id, COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '10' SECOND) GROUP BY a WITH (connector = 'redis', addr = 'h:1', layout = 'ysb')", 3, 123, "layout 'ysb' needs campaign_id to be a UUID"},
		{"CREATE SINK o AS SELECT u AS campaign_id, COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '10' SECOND) GROUP BY u WITH (connector = 'redis', addr = 'h:1', layout = 'ysb')", 3, 109, "layout 'ysb' needs the output column window_start; the columns are campaign_id, n"},
		{"!CREATE SOURCE y (window_start BIGINT, campaign_id UUID) WITH (connector = 'stdin');\nCREATE SINK o AS SELECT * FROM y WITH (connector = 'redis', addr = 'h:1', layout = 'ysb')", 2, 34, "layout 'ysb' needs a count column (seen_count, or an aggregate)"},
	} {
		text := tc.text
		if strings.HasPrefix(text, "!") {
			text = text[1:]
		} else {
			text = base + text
		}
		t.Run(tc.msg, func(t *testing.T) {
			e := compileErr(t, text)
			assert.Equal(t, tc.line, e.Line, e.Caret(text))
			assert.Equal(t, tc.col, e.Column, e.Caret(text))
			assert.Contains(t, e.Msg, tc.msg)
			checkErrorPosition(t, text, e)
		})
	}
}

func TestTemplateColumns(t *testing.T) {
	names, _, msg := templateColumns("cm1:{window_start}:{{lit}}:{cat}")
	require.Empty(t, msg)
	assert.Equal(t, []tmplName{{"window_start", 4}, {"cat", 27}}, names)
	for tmpl, at := range map[string]int{"{a": 0, "x}": 1, "a{}b": 1, "{a{b}": 0, "": 0, "{{a}}": 0} {
		_, bad, msg := templateColumns(tmpl)
		assert.NotEmpty(t, msg, "%q", tmpl)
		assert.Equal(t, at, bad, "%q: %s", tmpl, msg)
	}
}

// FuzzTemplateColumns: the key template parser never panics, reports an
// offset within the template, and every name it returns sits in braces at
// its offset.
func FuzzTemplateColumns(f *testing.F) {
	for _, s := range []string{"cm1:{window_start}:{cat}", "{{", "}}", "{a}{b}", "{", "x{y", "{}{}", "{{{a}}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, bad, msg := templateColumns(s)
		if msg != "" {
			if bad < 0 || bad > len(s) {
				t.Fatalf("%q: offset %d outside", s, bad)
			}
			return
		}
		if len(names) == 0 {
			t.Fatalf("%q: no names and no error", s)
		}
		for _, n := range names {
			if n.name == "" || !strings.HasPrefix(s[n.at:], "{"+n.name+"}") || strings.ContainsAny(n.name, "{}") {
				t.Fatalf("%q: name %q at %d", s, n.name, n.at)
			}
		}
	})
}
