package sql

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/internal/security"
)

// The kafka and redis connectors' options: checked here, kept in Source
// and Sink fields for the connectors (source/kafka, sink/kafka and the
// redis sink) to be built from.

// DefaultIdleTimeout is a kafka source's idle_timeout where not given.
const DefaultIdleTimeout = 5 * time.Second

// MaxFetchers bounds a kafka source's fetchers option.
const MaxFetchers = 64

// DefaultRedisFlush is a redis sink's flush where not given.
const DefaultRedisFlush = time.Second

// inValue is the position of byte i of option o's value (the value's
// text starts after its opening quote); the value's own position where
// the text before i would make the column wrong (a line break, a quote
// written twice), or the value is not the text's (${NAME} expanded).
func inValue(o option, i int) pos {
	pre := o.val[:min(i, len(o.val))]
	if o.expanded || strings.ContainsAny(pre, "\n'") {
		return o.valPos
	}
	return pos{off: o.valPos.off + 1 + i, line: o.valPos.line, col: o.valPos.col + 1 + i}
}

// brokerList reads a brokers option: host:port, comma separated.
func (s *optionSet) brokerList(key string) ([]string, error) {
	o, err := s.required(key, "the Kafka brokers, host:port separated by commas")
	if err != nil {
		return nil, err
	}
	var out []string
	at := 0
	for _, part := range strings.Split(o.val, ",") {
		b := strings.TrimSpace(part)
		p := inValue(o, at+strings.Index(part, b))
		at += len(part) + 1
		if b == "" {
			return nil, errAt(p, "%s = '%s': an empty broker (want host:port separated by commas)", o.name(), o.val)
		}
		if err := checkHostPort(b); err != "" {
			return nil, errAt(p, "%s = '%s': broker '%s' %s", o.name(), o.val, b, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// checkHostPort says what is wrong with a host:port ("" when nothing).
func checkHostPort(hp string) string {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return "is not host:port"
	}
	if host == "" {
		return "has no host"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "has port '" + port + "', want 1 to 65535"
	}
	return ""
}

// topicName reads a Kafka topic name: 1 to 249 of [a-zA-Z0-9._-], not "."
// or "..", as Kafka allows.
func (s *optionSet) topicName(key string) (string, error) {
	o, err := s.required(key, "the Kafka topic")
	if err != nil {
		return "", err
	}
	v := o.val
	if len(v) > 249 || v == "." || v == ".." {
		return "", errAt(o.valPos, "%s = '%s': not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -, not . or ..)", o.name(), v)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return "", errAt(inValue(o, i), "%s = '%s': character %q is not allowed in a Kafka topic name (valid: a-z A-Z 0-9 . _ -)", o.name(), v, c)
		}
	}
	return v, nil
}

// duration reads a positive Go duration ('5s', '250ms', '1m30s').
func (s *optionSet) duration(key string, def time.Duration) (time.Duration, error) {
	o, ok := s.get(key)
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(o.val)
	if err != nil || d <= 0 {
		return 0, errAt(o.valPos, "%s = '%s': want a positive duration such as '5s' or '250ms'", o.name(), o.val)
	}
	return d, nil
}

// has reports whether option key was given (without taking it).
func (s *optionSet) has(key string) bool {
	return slices.ContainsFunc(s.opts, func(o option) bool { return o.key == key })
}

// Flink's names of the kafka connector's options.
const (
	flinkBrokers = "properties.bootstrap.servers"
	flinkGroup   = "properties.group.id"
	flinkStart   = "scan.startup.mode"
	// flinkReset is the Kafka client's auto.offset.reset, which says
	// where scan.startup.mode = 'group-offsets' begins a partition
	// without a committed offset.
	flinkReset = "properties.auto.offset.reset"
	// Flink hands its properties.* options to the Kafka client: this
	// is the client's isolation.level.
	flinkIsolation = "properties.isolation.level"
)

// keyOr is the option that gives what key says: key, or Flink's name for
// it, alias, where only that is given.
func (s *optionSet) keyOr(key, alias string) string {
	if !s.has(key) && s.has(alias) {
		return alias
	}
	return key
}

// The options that a source read from a file, standard input or a Go
// program (a file's "path" besides), a generator source, a kafka source,
// a kafka sink and a redis sink take.
var (
	readerSourceOptions    = []string{"connector", "format", "tuple_size", "time_unit", "on_error", "header"}
	generatorSourceOptions = []string{"connector", "workload", "tuples_per_ms", "seed", "format", "rate"}
	kafkaSourceOptions     = append([]string{"connector", "brokers", "topic", "group", "start", "format", "tuple_size", "idle_timeout", "fetchers", "on_error", "time_unit",
		"isolation_level", flinkBrokers, flinkGroup, flinkStart, flinkReset, flinkIsolation}, security.KafkaOptions...)
	kafkaSinkOptions = append([]string{"connector", "brokers", "topic", "format", "key", flinkBrokers}, security.KafkaOptions...)
	redisSinkOptions = append([]string{"connector", "addr", "layout", "key", "fields", "flush"}, security.RedisOptions...)
)

// flinkStartup reads Flink's scan.startup.mode and
// properties.auto.offset.reset into src.Start (Source.KafkaCommitted
// reads them again from Options).
func (s *optionSet) flinkStartup(src *Source) error {
	reset, hasReset := s.get(flinkReset)
	o, ok := s.get(flinkStart)
	if !ok {
		if hasReset {
			return errAt(reset.keyPos, "option %s applies to %s = 'group-offsets' (start says where a source begins without a committed offset)", reset.name(), s.nameOf(flinkStart))
		}
		return nil
	}
	valid := []string{"earliest-offset", "latest-offset", "group-offsets"}
	switch mode := strings.ToLower(o.val); mode {
	case "earliest-offset", "latest-offset":
		// Flink's: from the partitions' start or end, whatever the
		// group committed (it still commits).
		src.Start = strings.TrimSuffix(mode, "-offset")
		if hasReset {
			return errAt(reset.keyPos, "option %s applies to %s = 'group-offsets', not '%s'", reset.name(), o.name(), o.val)
		}
	case "group-offsets":
		// From the group's committed offsets; without one, where
		// properties.auto.offset.reset says, else the source fails.
		if src.Group == "" {
			return errAt(o.valPos, "%s = '%s' needs a consumer group (%s or group) whose committed offsets to begin at", o.name(), o.val, flinkGroup)
		}
		r, err := s.oneOf(flinkReset, "none", "earliest", "latest", "none")
		if err != nil {
			return err
		}
		if r != "none" {
			src.Start = r
		}
	case "timestamp", "specific-offsets":
		return errAt(o.valPos, "%s = '%s' is not valid for %s (valid: %s): beginning at a timestamp or at given offsets is not supported", o.name(), o.val, s.what, strings.Join(valid, ", "))
	default:
		return errAt(o.valPos, "%s = '%s' is not valid for %s (valid: %s)", o.name(), o.val, s.what, strings.Join(valid, ", "))
	}
	return nil
}

// KafkaCommitted is how the offsets that a kafka source's group committed
// decide where it begins (package pipeline sets kafka.Config.Committed
// so): "use" (the default: at the committed offset of each partition, at
// Start where the group has none), "ignore" (scan.startup.mode
// 'earliest-offset' or 'latest-offset': at Start whatever the group
// committed; it still commits) or "require" (scan.startup.mode
// 'group-offsets' without properties.auto.offset.reset: at the committed
// offsets, the source failing to open where a partition has none).
func (s *Source) KafkaCommitted() string {
	switch strings.ToLower(s.Options[flinkStart]) {
	case "earliest-offset", "latest-offset":
		return "ignore"
	case "group-offsets":
		if r := strings.ToLower(s.Options[flinkReset]); r == "" || r == "none" {
			return "require"
		}
	}
	return "use"
}

// kafkaSource checks a kafka source's options into src.
func kafkaSource(src *Source, s *optionSet) (valid []string, tupleSize int64, err error) {
	valid = slices.Clone(kafkaSourceOptions)
	for _, pair := range [][2]string{{"brokers", flinkBrokers}, {"group", flinkGroup}, {"start", flinkStart}, {"isolation_level", flinkIsolation}} {
		if o, ok := s.get(pair[1]); ok && s.has(pair[0]) {
			return nil, 0, errAt(o.keyPos, "options %s and %s say the same: give one", s.nameOf(pair[0]), o.name())
		}
	}
	if src.Brokers, err = s.brokerList(s.keyOr("brokers", flinkBrokers)); err != nil {
		return nil, 0, err
	}
	if src.Topic, err = s.topicName("topic"); err != nil {
		return nil, 0, err
	}
	if src.KafkaSecurity, err = s.kafkaSecurity(); err != nil {
		return nil, 0, err
	}
	for _, key := range []string{"group", flinkGroup} {
		if o, ok := s.get(key); ok {
			if o.val == "" {
				return nil, 0, errAt(o.valPos, "option %s is empty (leave it out to read without a consumer group)", o.name())
			}
			src.Group = o.val
		}
	}
	if src.Start, err = s.oneOf("start", "earliest", "earliest", "latest"); err != nil {
		return nil, 0, err
	}
	if err := s.flinkStartup(src); err != nil {
		return nil, 0, err
	}
	if src.IsolationLevel, err = s.oneOf(s.keyOr("isolation_level", flinkIsolation), "read_committed", "read_committed", "read_uncommitted"); err != nil {
		return nil, 0, err
	}
	if src.Format, err = s.oneOf("format", "json", "json", "csv", "binary"); err != nil {
		return nil, 0, err
	}
	if o, ok := s.get("header"); ok {
		return nil, 0, errAt(o.keyPos, "option header does not apply to a kafka source: each record is one line, without a header")
	}
	if o, ok := s.get("tuple_size"); ok && src.Format != "binary" {
		return nil, 0, errAt(o.keyPos, "option tuple_size applies to format = 'binary'; for '%s' the compiler lays the tuple out", src.Format)
	}
	if tupleSize, _, err = s.positive("tuple_size", 1<<20); err != nil {
		return nil, 0, err
	}
	if src.IdleTimeout, err = s.duration("idle_timeout", DefaultIdleTimeout); err != nil {
		return nil, 0, err
	}
	fetchers, given, err := s.positive("fetchers", MaxFetchers)
	if err != nil {
		return nil, 0, err
	}
	if given && src.Group != "" {
		o, _ := s.get("fetchers")
		return nil, 0, errAt(o.keyPos, "option fetchers does not apply with a group: a group member reads through one client")
	}
	src.Fetchers = int(fetchers)
	if src.OnError, err = s.oneOf("on_error", "fail", "fail", "skip"); err != nil {
		return nil, 0, err
	}
	if src.TimeUnit, err = s.oneOf("time_unit", "ms", "s", "ms", "us", "ns"); err != nil {
		return nil, 0, err
	}
	return valid, tupleSize, nil
}

// column returns the output column called name.
func column(cols []OutputColumn, name string) (OutputColumn, bool) {
	for _, c := range cols {
		if c.Name == name {
			return c, true
		}
	}
	return OutputColumn{}, false
}

func columnNames(cols []OutputColumn) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// kafkaSink checks a kafka sink's options into sk.
func kafkaSink(sk *Sink, s *optionSet, cols []OutputColumn) (valid []string, err error) {
	valid = slices.Clone(kafkaSinkOptions)
	if o, ok := s.get(flinkBrokers); ok && s.has("brokers") {
		return nil, errAt(o.keyPos, "options brokers and %s say the same: give one", o.name())
	}
	if sk.Brokers, err = s.brokerList(s.keyOr("brokers", flinkBrokers)); err != nil {
		return nil, err
	}
	if sk.Topic, err = s.topicName("topic"); err != nil {
		return nil, err
	}
	if sk.KafkaSecurity, err = s.kafkaSecurity(); err != nil {
		return nil, err
	}
	if sk.Format, err = s.oneOf("format", "json", "json", "csv"); err != nil {
		return nil, err
	}
	if o, ok := s.get("key"); ok {
		if _, ok := column(cols, o.val); !ok {
			return nil, errAt(o.valPos, "key = '%s' is not an output column (valid: %s)", o.val, columnNames(cols))
		}
		sk.Key = o.val
	}
	return valid, nil
}

// redisSink checks a redis sink's options into sk.
func redisSink(sk *Sink, s *optionSet, cols []OutputColumn) (valid []string, err error) {
	valid = slices.Clone(redisSinkOptions)
	if sk.Redis, err = s.redisServer(); err != nil {
		return nil, err
	}
	sk.Addr = sk.Redis.Addr
	if sk.Layout, err = s.oneOf("layout", "hash", "hash", "ysb"); err != nil {
		return nil, err
	}
	if sk.Flush, err = s.duration("flush", DefaultRedisFlush); err != nil {
		return nil, err
	}
	if sk.Layout == "ysb" {
		return valid, ysbLayout(sk, s, cols)
	}
	k, err := s.required("key", "a template over the output columns, such as 'cm1:{window_start}:{cat}'")
	if err != nil {
		return nil, err
	}
	names, bad, msg := templateColumns(k.val)
	if msg != "" {
		return nil, errAt(inValue(k, bad), "key = '%s': %s", k.val, msg)
	}
	for i, n := range names {
		if _, ok := column(cols, n.name); !ok {
			return nil, errAt(inValue(k, names[i].at), "key = '%s': {%s} is not an output column (valid: %s)", k.val, n.name, columnNames(cols))
		}
	}
	sk.KeyTemplate = k.val
	if f, ok := s.get("fields"); ok {
		at := 0
		for _, part := range strings.Split(f.val, ",") {
			name := strings.TrimSpace(part)
			p := inValue(f, at+strings.Index(part, name))
			at += len(part) + 1
			if _, ok := column(cols, name); !ok {
				return nil, errAt(p, "fields = '%s': '%s' is not an output column (valid: %s)", f.val, name, columnNames(cols))
			}
			if slices.Contains(sk.Fields, name) {
				return nil, errAt(p, "fields = '%s': '%s' given twice", f.val, name)
			}
			sk.Fields = append(sk.Fields, name)
		}
		return valid, nil
	}
	// By default the hash holds every column the key does not name.
	for _, c := range cols {
		if !slices.ContainsFunc(names, func(n tmplName) bool { return n.name == c.Name }) {
			sk.Fields = append(sk.Fields, c.Name)
		}
	}
	if len(sk.Fields) == 0 {
		return nil, errAt(k.valPos, "key = '%s' names every output column: the hash would have no fields (add a column, or give fields)", k.val)
	}
	return valid, nil
}

// ysbLayout checks the columns of layout = 'ysb': campaign_id (a UUID),
// window_start and the count, seen_count or else the first aggregate;
// Fields is then the count column.
func ysbLayout(sk *Sink, s *optionSet, cols []OutputColumn) error {
	for _, key := range []string{"key", "fields"} {
		if o, ok := s.get(key); ok {
			return errAt(o.keyPos, "option %s applies to layout = 'hash': layout 'ysb' writes YSB's own keys", key)
		}
	}
	c, ok := column(cols, "campaign_id")
	if !ok {
		return errAt(s.withPos, "layout 'ysb' needs an output column campaign_id (a UUID); the columns are %s", columnNames(cols))
	}
	if c.Type != "UUID" {
		return errAt(s.withPos, "layout 'ysb' needs campaign_id to be a UUID, not %s", c.Type)
	}
	if _, ok := column(cols, "window_start"); !ok {
		return errAt(s.withPos, "layout 'ysb' needs the output column window_start; the columns are %s", columnNames(cols))
	}
	count, ok := column(cols, "seen_count")
	if !ok {
		i := slices.IndexFunc(cols, func(c OutputColumn) bool { return c.Kind == Aggregate })
		if i < 0 {
			return errAt(s.withPos, "layout 'ysb' needs a count column (seen_count, or an aggregate); the columns are %s", columnNames(cols))
		}
		count = cols[i]
	}
	sk.Fields = []string{count.Name}
	return nil
}

// tmplName is a column a key template names, at byte at of the template
// (its '{').
type tmplName struct {
	name string
	at   int
}

// templateColumns parses a key template: text with column names in
// braces ("cm1:{window_start}:{cat}"); "{{" and "}}" are a literal brace.
// It returns the names, or the byte offset of what is wrong and why.
func templateColumns(t string) (names []tmplName, bad int, msg string) {
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '{':
			if i+1 < len(t) && t[i+1] == '{' {
				i++
				continue
			}
			end := strings.IndexAny(t[i+1:], "{}")
			if end < 0 || t[i+1+end] == '{' {
				return nil, i, "'{' is not closed by '}' (write {{ for a literal brace)"
			}
			name := t[i+1 : i+1+end]
			if strings.TrimSpace(name) == "" {
				return nil, i, "{} names no column"
			}
			names = append(names, tmplName{name: name, at: i})
			i += end + 1
		case '}':
			if i+1 < len(t) && t[i+1] == '}' {
				i++
				continue
			}
			return nil, i, "'}' without '{' (write }} for a literal brace)"
		}
	}
	if len(names) == 0 {
		return nil, 0, "names no column: every row would write the same key (name columns in braces, such as {window_start})"
	}
	return names, 0, ""
}
