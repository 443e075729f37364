package sql

import (
	"slices"
	"strconv"
	"strings"

	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/workloads"
)

// optionSet is the options of one WITH clause, checked one by one: every
// option must be taken by the statement's kind, the others are refused.
type optionSet struct {
	what    string // "a file source", for errors
	opts    []option
	withPos pos
	used    map[string]bool
}

func newOptions(what string, opts []option, withPos pos) *optionSet {
	return &optionSet{what: what, opts: opts, withPos: withPos, used: map[string]bool{}}
}

// nameOf is option key as the WITH list names it, for errors: its old
// name where renameLegacyOptions renamed it ('connector.path' for path),
// else key (an option not given too).
func (s *optionSet) nameOf(key string) string {
	for _, o := range s.opts {
		if o.key == key {
			return o.name()
		}
	}
	return key
}

func (s *optionSet) get(key string) (option, bool) {
	for _, o := range s.opts {
		if o.key == key {
			s.used[key] = true
			return o, true
		}
	}
	return option{}, false
}

// oneOf returns the value of key (lower case), def where absent; a value
// outside valid is an error at the value.
func (s *optionSet) oneOf(key, def string, valid ...string) (string, error) {
	o, ok := s.get(key)
	if !ok {
		return def, nil
	}
	v := strings.ToLower(o.val)
	if !slices.Contains(valid, v) {
		return "", errAt(o.valPos, "%s = '%s' is not valid for %s (valid: %s)", o.name(), o.val, s.what, strings.Join(valid, ", "))
	}
	return v, nil
}

func (s *optionSet) required(key, hint string) (option, error) {
	o, ok := s.get(key)
	if !ok {
		return o, errAt(s.withPos, "%s needs the option %s (%s)", s.what, key, hint)
	}
	if o.val == "" {
		return o, errAt(o.valPos, "option %s is empty", o.name())
	}
	return o, nil
}

func (s *optionSet) boolean(key string) (bool, error) {
	v, err := s.oneOf(key, "false", "true", "false")
	return v == "true", err
}

func (s *optionSet) positive(key string, max int64) (int64, bool, error) {
	o, ok := s.get(key)
	if !ok {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(o.val, 10, 64)
	if err != nil || v <= 0 || v > max {
		return 0, false, errAt(o.valPos, "%s = '%s': must be an integer in [1, %d]", o.name(), o.val, max)
	}
	return v, true, nil
}

// rest refuses the options that nothing took.
func (s *optionSet) rest(valid ...string) error {
	for _, o := range s.opts {
		if !s.used[o.key] {
			return errAt(o.keyPos, "unknown option %s for %s (valid: %s)", o.name(), s.what, strings.Join(valid, ", "))
		}
	}
	return nil
}

// all is the options as they may be shown: passwords as ***.
func (s *optionSet) all() map[string]string {
	m := make(map[string]string, len(s.opts))
	for _, o := range s.opts {
		m[o.key] = redactOption(o.key, o.val)
	}
	return m
}

// localPath is the path of a file connector's option o: a file: URI's
// path (Flink's filesystem connector takes URIs: file:///p,
// file://localhost/p and Java's file:/p) or the path as it is. A file
// URI of another host is refused.
func localPath(o option) (string, error) {
	rest, ok := strings.CutPrefix(o.val, "file:")
	switch {
	case !ok:
		return o.val, nil
	case strings.HasPrefix(rest, "///") || strings.HasPrefix(rest, "//localhost/"):
		return rest[strings.Index(rest[2:], "/")+2:], nil
	case strings.HasPrefix(rest, "//"):
		return "", errAt(o.valPos, "%s = '%s': a file of another host (only this machine's files are read or written: file:///path)", o.name(), o.val)
	case strings.HasPrefix(rest, "/"):
		return rest, nil
	}
	return o.val, nil
}

// legacyKeys are the option names of Flink's connector descriptors
// before its version 1.11 ('connector.type' = 'filesystem', as Nexmark's
// q13 declares its side input) and the names they have now.
var legacyKeys = map[string]string{"connector.type": "connector", "connector.path": "path", "format.type": "format", "connector.topic": "topic"}

// renameLegacyOptions gives a WITH list written with 'connector.type' the
// option names of today ('connector.properties.x' is 'properties.x');
// options of the old descriptors that have no counterpart are left to be
// refused by name. An option given under both names is refused, as one
// given twice is: the options read the first of them, and the other
// would be dropped unsaid.
func renameLegacyOptions(stmts []*stmt) error {
	for _, st := range stmts {
		if !slices.ContainsFunc(st.opts, func(o option) bool { return o.key == "connector.type" }) {
			continue
		}
		for i := range st.opts {
			o := &st.opts[i]
			old := o.key
			if k, ok := legacyKeys[o.key]; ok {
				o.key = k
			} else if rest, ok := strings.CutPrefix(o.key, "connector.properties."); ok {
				o.key = "properties." + rest
			}
			if o.key != old {
				o.written = old
				for j := range st.opts {
					if j != i && st.opts[j].key == o.key {
						later := st.opts[max(i, j)]
						return errAt(later.keyPos, "option %s given twice: %s is Flink's old name of %s", o.key, old, o.key)
					}
				}
			}
		}
	}
	return nil
}

var timeUnits = map[string]int64{"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1}

// sourceOptions checks a source's WITH clause into src (Schema not yet laid out).
func sourceOptions(src *Source, st *stmt) (unitNs int64, tupleSize int64, err error) {
	base := newOptions("source "+src.Name, st.opts, st.withPos)
	conn, err := base.required("connector", "'file', 'stdin', 'generator', 'kafka', 'nexmark' or 'go'")
	if err != nil {
		return 0, 0, err
	}
	src.Connector = strings.ToLower(conn.val)
	if src.Connector == "filesystem" { // Flink's name
		src.Connector = "file"
	}
	s := newOptions("a "+src.Connector+" source", st.opts, st.withPos)
	s.used["connector"] = true
	var valid []string
	switch src.Connector {
	case "file", "stdin", "go":
		// go: the embedding Go program feeds it (package pipeline's
		// AttachSource or AttachReader), in the format declared.
		valid = slices.Clone(readerSourceOptions)
		if src.Connector == "file" {
			valid = append(valid, "path")
			p, err := s.required("path", "the file to read")
			if err != nil {
				return 0, 0, err
			}
			if src.Path, err = localPath(p); err != nil {
				return 0, 0, err
			}
		}
		if src.Format, err = s.oneOf("format", "binary", "binary", "csv", "json"); err != nil {
			return 0, 0, err
		}
		if src.OnError, err = s.oneOf("on_error", "fail", "fail", "skip"); err != nil {
			return 0, 0, err
		}
		if o, ok := s.get("header"); ok && src.Format != "csv" {
			return 0, 0, errAt(o.keyPos, "option header applies to %s = 'csv', not '%s'", s.nameOf("format"), src.Format)
		}
		if src.Header, err = s.boolean("header"); err != nil {
			return 0, 0, err
		}
		if o, ok := s.get("tuple_size"); ok && src.Format != "binary" {
			return 0, 0, errAt(o.keyPos, "option tuple_size applies to %s = 'binary'; for '%s' the compiler lays the tuple out", s.nameOf("format"), src.Format)
		}
		if tupleSize, _, err = s.positive("tuple_size", 1<<20); err != nil {
			return 0, 0, err
		}
		if src.TimeUnit, err = s.oneOf("time_unit", "ms", "s", "ms", "us", "ns"); err != nil {
			return 0, 0, err
		}
	case "generator":
		valid = generatorSourceOptions
		w, err := s.required("workload", "one of "+strings.Join(workloads.Names(), ", "))
		if err != nil {
			return 0, 0, err
		}
		wl, lerr := workloads.Lookup(w.val)
		if lerr != nil {
			return 0, 0, errAt(w.valPos, "%v", lerr)
		}
		src.Workload = wl.Name
		if src.Format, err = s.oneOf("format", "binary", "binary"); err != nil {
			return 0, 0, err
		}
		rate, _, err := s.positive("tuples_per_ms", workloads.MaxTuplesPerMs)
		if err != nil {
			return 0, 0, err
		}
		src.TuplesPerMs = int(rate)
		if src.Rate, _, err = s.positive("rate", 1<<40); err != nil {
			return 0, 0, err
		}
		if o, ok := s.get("seed"); ok {
			seed, perr := strconv.ParseUint(o.val, 10, 64)
			if perr != nil {
				return 0, 0, errAt(o.valPos, "seed = '%s': must be an unsigned 64-bit integer", o.val)
			}
			src.Seed, src.SeedSet = seed, true
		}
		src.TimeUnit, src.OnError = "ms", "fail"
		tupleSize = int64(wl.Schema.TupleSize)
	case "kafka":
		if valid, tupleSize, err = kafkaSource(src, s); err != nil {
			return 0, 0, err
		}
	case "nexmark":
		if valid, err = nexmarkOptions(src, s); err != nil {
			return 0, 0, err
		}
	default:
		if st.table {
			return 0, 0, errAt(conn.valPos, "unknown connector '%s' for a table (valid: file for a static table; file, filesystem, stdin, generator, kafka, nexmark, go for a source; blackhole, print, stdout, file, filesystem, kafka, redis for a sink that INSERT INTO writes)", conn.val)
		}
		return 0, 0, errAt(conn.valPos, "unknown connector '%s' for a source (valid: file, stdin, generator, kafka, nexmark, go)", conn.val)
	}
	if err := s.rest(valid...); err != nil {
		return 0, 0, err
	}
	src.Options = s.all()
	return timeUnits[src.TimeUnit], tupleSize, nil
}

// checkGenerator refuses a generator source whose declared layout is not
// the workload's.
func checkGenerator(src *Source, st *stmt) error {
	wl, _ := workloads.Lookup(src.Workload)
	if err := query.SameLayout(src.Schema, wl.Schema); err != nil {
		o, _ := newOptions("", st.opts, st.withPos).get("workload")
		return errAt(o.valPos, "source %s does not have the layout of workload %s's tuples: %v", src.Name, wl.Name, err)
	}
	return nil
}

func tableOptions(t *Table, st *stmt) error {
	base := newOptions("table "+t.Name, st.opts, st.withPos)
	conn, err := base.required("connector", "'file'")
	if err != nil {
		return err
	}
	t.Connector = strings.ToLower(conn.val)
	if t.Connector == "filesystem" { // Flink's name
		t.Connector = "file"
	}
	if t.Connector != "file" {
		return errAt(conn.valPos, "unknown connector '%s' for a table (valid: file)", conn.val)
	}
	s := newOptions("a file table", st.opts, st.withPos)
	s.used["connector"] = true
	p, err := s.required("path", "the file to load")
	if err != nil {
		return err
	}
	if t.Path, err = localPath(p); err != nil {
		return err
	}
	if t.Format, err = s.oneOf("format", "csv", "csv", "json"); err != nil {
		return err
	}
	if o, ok := s.get("header"); ok && t.Format != "csv" {
		return errAt(o.keyPos, "option header applies to %s = 'csv', not '%s'", s.nameOf("format"), t.Format)
	}
	if t.Header, err = s.boolean("header"); err != nil {
		return err
	}
	if err := s.rest("connector", "path", "format", "header"); err != nil {
		return err
	}
	t.Options = s.all()
	return nil
}

// sinkOptions checks a sink's WITH clause; cols are its query's output
// columns, which the kafka and redis options name.
func sinkOptions(name string, st *stmt, cols []OutputColumn) (*Sink, error) {
	sk := &Sink{Name: name}
	base := newOptions("sink "+name, st.opts, st.withPos)
	conn, err := base.required("connector", "'file', 'stdout', 'kafka' or 'redis'")
	if err != nil {
		return nil, err
	}
	sk.Connector = strings.ToLower(conn.val)
	if sk.Connector == "filesystem" { // Flink's name
		sk.Connector = "file"
	}
	s := newOptions("a "+sk.Connector+" sink", st.opts, st.withPos)
	s.used["connector"] = true
	valid := []string{"connector", "format"}
	if len(st.partitionBy) > 0 && sk.Connector != "file" {
		return nil, errAt(st.partPos, "table %s: PARTITIONED BY is for connector = 'filesystem' (a directory per partition), not '%s'", name, conn.val)
	}
	switch sk.Connector {
	case "blackhole":
		valid = valid[:1]
	case "print":
	case "file":
		valid = append(valid, "path")
		p, err := s.required("path", "the file to write")
		if err != nil {
			return nil, err
		}
		if sk.Path, err = localPath(p); err != nil {
			return nil, err
		}
		valid = append(valid, rollingOptions...)
		if err := rollingPolicy(s); err != nil {
			return nil, err
		}
		if len(st.partitionBy) > 0 {
			valid = append(valid, partitionOptions...)
			if sk.Partition, err = partitioning(st, s, cols); err != nil {
				return nil, err
			}
		}
	case "stdout":
	case "kafka":
		if valid, err = kafkaSink(sk, s, cols); err != nil {
			return nil, err
		}
	case "redis":
		if valid, err = redisSink(sk, s, cols); err != nil {
			return nil, err
		}
	default:
		return nil, errAt(conn.valPos, "unknown connector '%s' for a sink (valid: file, stdout, kafka, redis, blackhole, print)", conn.val)
	}
	switch sk.Connector {
	case "file", "stdout", "print":
		if sk.Format, err = s.oneOf("format", "csv", "csv", "json"); err != nil {
			return nil, err
		}
	case "redis", "blackhole":
		sk.Format = ""
	}
	if err := s.rest(valid...); err != nil {
		return nil, err
	}
	sk.Options = s.all()
	return sk, nil
}
