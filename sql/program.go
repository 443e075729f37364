package sql

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/nexmark"
	"github.com/saber-hx/saber-hx/query"
	"github.com/saber-hx/saber-hx/strview"
)

// Program is a compiled SQL text.
type Program struct {
	Sources []*Source
	Tables  []*Table
	// Queries in dependency order: a query's From names only earlier ones.
	Queries []*Query
}

// Source is a CREATE SOURCE: a stream of fixed-size tuples.
type Source struct {
	Name    string
	Line    int
	Columns []Column // in declared order; Attr gives each one's place in the tuple
	Schema  *query.Schema
	// EventTime is the event-time column (attribute 0 of Schema, an int64
	// at offset 0): a BIGINT in TimeUnit, or a TIMESTAMP (milliseconds).
	EventTime string
	// TimeUnit is time_unit: the unit of a BIGINT event time and of the
	// epoch numbers that TIMESTAMP columns of CSV and JSON records may
	// hold ("s", "ms", "us" or "ns").
	TimeUnit string
	// ProcTime is the column declared name AS PROCTIME() ("" for none):
	// a TIMESTAMP (Kind KindTimestamp, never NULL) that no record holds,
	// which the reader of the source fills with the wall clock (ms since
	// the epoch, UTC) as it ingests each tuple; Layout leaves it out. When
	// it is the event time (a window names it, and there is no
	// WATERMARK), windows over the source are processing-time windows.
	ProcTime string
	// Watermark is whether WATERMARK FOR was declared; WatermarkDelay is its
	// delay in TimeUnit (always 0 today: the engine's watermark is the
	// largest event time seen, and a delay is refused).
	Watermark      bool
	WatermarkDelay int64
	Connector      string // "file", "stdin", "generator", "kafka", "nexmark" or "go" (fed by the embedding program: package pipeline)
	Format         string // "binary", "csv" or "json" (a generator's is binary; kafka's default is json)
	Path           string // connector = 'file'
	Header         bool   // csv: the first line is a header
	OnError        string // "fail" (the default) or "skip": what to do with a record that does not decode
	Workload       string // connector = 'generator': the workloads name
	TuplesPerMs    int    // generator: its event-time rate (0: the workload's default)
	Rate           int64  // generator: tuples per second of wall-clock time (0: as fast as it can)
	Seed           uint64 // generator: its seed (0 where not given: the workload's default)
	SeedSet        bool   // whether seed was given
	// connector = 'kafka': the brokers (host:port), the topic, the
	// consumer group ("" for none), where to start without a committed
	// offset ("earliest", the default, or "latest") and how long a
	// partition with nothing buffered holds the merge back.
	Brokers     []string
	Topic       string
	Group       string
	Start       string
	IdleTimeout time.Duration
	// Fetchers is how many consumer clients, each with a goroutine that
	// decodes what it polls, read a kafka source without a group (0: one;
	// kafka.Config.Fetchers).
	Fetchers int
	// IsolationLevel is which records of transactions a kafka source
	// reads: "read_committed" (the default: the committed ones) or
	// "read_uncommitted" (every one, aborted ones included).
	IsolationLevel string
	// KafkaSecurity is how a kafka source's connections are secured
	// (properties.security.protocol, properties.sasl.*,
	// properties.ssl.*; the zero value is PLAINTEXT).
	KafkaSecurity security.Kafka
	// connector = 'nexmark': the generator's configuration and the table
	// of its sequence that the source is (its tuples are that table's).
	Nexmark      nexmark.Config
	NexmarkTable nexmark.Table
	// Options holds every option as written (keys in lower case; values
	// with their ${NAME} placeholders read, passwords as ***), so that
	// connectors can read their own.
	Options map[string]string
	// DictNumbers are the VARCHAR columns of a CSV or JSON source that a
	// query over it groups by, by attribute name: the decoders
	// dictionary-encode them (Layout, source.Column.Dict), writing each
	// string's number at this offset, in bytes the compiler added to the
	// tuple; the queries read the numbers (engine.Spec.DictColumns,
	// DictQuery). nil: none.
	DictNumbers map[string]int
}

// DictQuery reports whether query q reads source s's tuples as the
// decoders write them, so that it may read the numbers of s's
// dictionary-encoded columns (engine.Spec.DictColumns).
func (s *Source) DictQuery(q *Query) bool {
	return q.Input == s.Name && q.Spec.Query != nil && q.Spec.Query.Schema == s.Schema && !q.Spec.Query.Stateless() &&
		(s.Format == "csv" || s.Format == "json")
}

// Kind is a column's declared type.
type Kind uint8

const (
	KindInt       Kind = iota + 1 // INT: int32
	KindBigint                    // BIGINT: int64
	KindReal                      // REAL: float32
	KindDouble                    // DOUBLE: float64
	KindUUID                      // UUID: 16 bytes in the order of the text form
	KindBytes                     // BYTES(n): n bytes
	KindEnum                      // ENUM(...): the label's position, int32
	KindString                    // VARCHAR, STRING: a 16-byte view (package strview)
	KindTimestamp                 // TIMESTAMP(p), TIMESTAMP_LTZ(p): int64 ms since the epoch, UTC (Logical Time)
	KindBool                      // BOOLEAN: int32 0 or 1 (Logical Boolean)
)

// Column is a declared column.
type Column struct {
	Name   string
	Kind   Kind
	Type   string // as SQL spells it: INT, BIGINT, REAL, DOUBLE, UUID, BYTES(n), ENUM('a', ...), VARCHAR, TIMESTAMP(3), BOOLEAN, DECIMAL(p, s), ...
	Labels []string
	// Attr is its place in the tuple (in a table's row: the NULL bits,
	// then the columns in declared order), with its NULL bit where it is
	// Nullable: a column of a CSV or JSON source or table that is not
	// declared NOT NULL (but the event time).
	Attr query.Attribute
}

// Table is a CREATE TABLE: a static relation joined to streams. Its rows
// are loaded by the caller (Load, LoadCSV, LoadJSON or SetRows) before
// the engine starts.
type Table struct {
	Name      string
	Line      int
	Columns   []Column
	Connector string // "file"
	Format    string // "csv" or "json"
	Path      string
	Header    bool
	Options   map[string]string
	// uses are the query.StaticTables that the joins with this table read.
	uses  []*tableUse
	types []sqlType
	rows  int
	// strings holds the long strings of the rows loaded (Load): the
	// views in the rows and in the joins' values point into it. A new
	// load takes a new arena; the old one is freed.
	strings *strview.Arena
}

// tableUse is one join's view of the table: the key column and either
// the value column (value >= 0: the aggregation's joined value, grouped
// by) or the value columns laid out as Values (a lookup join).
type tableUse struct {
	key   int
	value int
	// keyAttr is the stream column the key is compared with: its type
	// says how the table's key values are encoded (bytes as they are,
	// integers as its little-endian bytes, strings as their bytes).
	keyAttr query.Attribute
	values  []int         // lookup join: the table's columns in Values, in order
	schema  *query.Schema // lookup join: Values
	t       *query.StaticTable
}

// RowSize is the bytes of one row for SetRows: a byte of NULL bits for
// every eight nullable columns, then the columns in declared order, each
// at Column.Attr.Offset.
func (t *Table) RowSize() int {
	size := 0
	for _, c := range t.Columns {
		size = max(size, c.Attr.Offset+c.Attr.Size)
		if c.Attr.Nullable {
			size = max(size, c.Attr.NullBit/8+1)
		}
	}
	return size
}

// SetRows loads the table's rows (each RowSize bytes) into every query that
// joins it. A row whose key is NULL matches nothing (it is left out); a key
// given twice is refused, and so is a NULL in a column that an
// aggregation groups by (the joined value). A String column's view in a
// row must stay valid for as long as the queries run.
func (t *Table) SetRows(rows [][]byte) error {
	size := t.RowSize()
	for i, r := range rows {
		if len(r) != size {
			return fmt.Errorf("table %s: row %d has %d bytes, want %d", t.Name, i, len(r), size)
		}
	}
	for _, u := range t.uses {
		k := t.Columns[u.key].Attr
		keys := make([][]byte, 0, len(rows))
		vals := make([][]byte, 0, len(rows))
		seen := make(map[string]int, len(rows))
		for i, r := range rows {
			if k.IsNull(r) {
				continue
			}
			key, ok := encodeKey(k, u.keyAttr, r)
			if !ok {
				continue // an integer the stream's column cannot hold: it matches nothing
			}
			if j, dup := seen[string(key)]; dup {
				return fmt.Errorf("table %s: rows %d and %d have the same %s", t.Name, j, i, t.Columns[u.key].Name)
			}
			seen[string(key)] = i
			var val []byte
			if u.schema == nil {
				v := t.Columns[u.value].Attr
				if v.IsNull(r) {
					return fmt.Errorf("table %s: row %d: %s is NULL, and a query groups by it (the value it joins): give it a value", t.Name, i, t.Columns[u.value].Name)
				}
				val = r[v.Offset : v.Offset+v.Size : v.Offset+v.Size]
			} else {
				val = make([]byte, u.schema.TupleSize)
				for j, col := range u.values {
					from, to := t.Columns[col].Attr, u.schema.Attrs[j]
					if from.IsNull(r) {
						to.SetNull(val, true)
						continue
					}
					copy(val[to.Offset:to.Offset+to.Size], r[from.Offset:from.Offset+from.Size])
				}
			}
			keys = append(keys, key)
			vals = append(vals, val)
		}
		u.t.Keys, u.t.Values = keys, vals
	}
	t.rows = len(rows)
	return nil
}

// Rows is the number of rows loaded.
func (t *Table) Rows() int { return t.rows }

// encodeKey is the table key of row r's column k as the stream column s
// holds its values: bytes as they are, an integer as s's little-endian
// bytes (false where s cannot hold it), a string as its bytes.
func encodeKey(k, s query.Attribute, r []byte) ([]byte, bool) {
	b := r[k.Offset : k.Offset+k.Size]
	switch s.Type {
	case query.Int32, query.Int64:
		var v int64
		if k.Type == query.Int32 {
			v = int64(int32(binary.LittleEndian.Uint32(b)))
		} else {
			v = int64(binary.LittleEndian.Uint64(b))
		}
		if s.Type == query.Int32 {
			if v != int64(int32(v)) {
				return nil, false
			}
			return binary.LittleEndian.AppendUint32(nil, uint32(v)), true
		}
		return binary.LittleEndian.AppendUint64(nil, uint64(v)), true
	case query.String:
		return slices.Clone(strview.Bytes(b)), true
	}
	return b[:len(b):len(b)], true
}

// Query is one compiled query: a SELECT, a CREATE VIEW or a CREATE SINK.
type Query struct {
	Name string
	Line int
	// Spec is what engine.Start takes, without its sinks (Windows, Tuples):
	// Query or Join, and Upstream/UpstreamRight referring to the views it
	// reads (engine.Output of the view's index in Program.Queries).
	Spec engine.Spec
	// Input and InputRight name the sources that feed Stream(i) and, for a
	// join, Stream(i).Right(); "" where the input is a view (From).
	Input, InputRight string
	// From and FromRight name the views it reads (Spec.Upstream and
	// Spec.UpstreamRight); "" where the input is a source.
	From, FromRight string
	View            bool // CREATE VIEW: its output feeds other queries
	// Part is, for a query the compiler made as a step of another (an
	// anonymous view: a subquery in FROM, the aggregation under a select
	// list that computes over aggregates, the inner aggregation of
	// COUNT(DISTINCT), a window join under its select list), the name of
	// the query it is part of; "" for a statement's own query. A part has
	// no Sink: its output feeds the queries after it.
	Part string
	Sink *Sink
	// Output is the schema of the query's output tuples (Spec.Tuples; an
	// aggregation outputs one tuple per row): see query.Query.OutputSchema.
	Output *query.Schema
	// Columns are the select list's columns, in order (the CSV header).
	Columns []OutputColumn
	// TimeUnit is the unit of the event times of the tuples the query
	// reads: its source's time_unit, milliseconds for a TIMESTAMP or a
	// processing time (which a part before the query stamps, whatever the
	// source's own unit), a view's that of its input. 0 where they have
	// none (a row window's output) and for the projection that converts a
	// statement's rows to its table's column types.
	TimeUnit time.Duration
}

// Sink is where a query's output goes.
type Sink struct {
	Name string // the CREATE SINK's name, or INSERT INTO's table; "" for a plain SELECT
	// Connector is "stdout", "file", "kafka" or "redis", or a sink
	// table's "blackhole" (the rows are discarded: counted, written
	// nowhere) or "print" (the rows go to standard output, as a plain
	// SELECT's do: CSV with a header of the columns, or format = 'json').
	// Flink's 'filesystem' is "file".
	Connector string
	Path      string
	Format    string // "csv" or "json" (kafka's default is json; "" for redis)
	// connector = 'kafka': the brokers, the topic and the output column
	// whose text is each record's key ("" for none).
	Brokers []string
	Topic   string
	Key     string
	// KafkaSecurity is how a kafka sink's connections are secured.
	KafkaSecurity security.Kafka
	// connector = 'redis': the server (Addr, its host:port, and Redis:
	// the address again with the password or ACL user and TLS to
	// connect with); the layout ("hash" or "ysb");
	// hash: KeyTemplate ("cm1:{window_start}:{cat}") and the columns
	// written as the hash's fields; ysb: Fields is the count column. Flush
	// is how often writes are sent.
	Addr        string
	Redis       security.Redis
	Layout      string
	KeyTemplate string
	Fields      []string
	Flush       time.Duration
	Options     map[string]string
	// Partition is a filesystem sink table's PARTITIONED BY and its
	// partition options (nil: none): the rows go to a directory per
	// partition under Path.
	Partition *Partitioning
}

// Partitioning is how a filesystem sink table's rows are laid out in
// directories, and when a partition is committed (Flink's filesystem
// connector: PARTITIONED BY, partition.*, sink.partition-commit.*).
type Partitioning struct {
	// Columns are the partition columns' indexes in Query.Columns, in
	// PARTITIONED BY's order; Names their names.
	Columns []int
	Names   []string
	// DefaultName is partition.default-name: a NULL or empty value's
	// directory value (Flink's __DEFAULT_PARTITION__).
	DefaultName string
	// Trigger is "" (partitions are not committed: no policy) or
	// "partition-time": a partition is committed once the watermark is
	// past its time (Pattern) plus Delay.
	Trigger string
	Delay   time.Duration
	// Pattern is partition.time-extractor.timestamp-pattern ("$dt
	// $hm:00"); "": the first partition column's value.
	Pattern string
	// SuccessFile is the name of the empty file that the success-file
	// policy writes in a committed partition ("": no policy).
	SuccessFile string
	// WatermarkDelay is the WATERMARK delay, in TimeUnit, of the source
	// whose tuples the query passes on: the sink's watermark is the
	// largest event time of its rows less it.
	WatermarkDelay int64
	TimeUnit       time.Duration
}

// ColumnKind says where an output column's values are.
type ColumnKind uint8

const (
	WindowStart ColumnKind = iota + 1 // engine.Window.Start
	WindowEnd                         // engine.Window.End: the window start (attribute 0) plus the query's window size
	GroupKey                          // GROUP BY value Index (engine.Window.GroupInt, or Key for bytes)
	Aggregate                         // aggregate Index (engine.Window.Agg / AggFloat)
	Attribute                         // attribute Index of an output tuple (Query.Output)
)

// OutputColumn is one column of a query's output.
type OutputColumn struct {
	Name  string
	Kind  ColumnKind
	Index int
	// Attr is the column's attribute in Query.Output (-1 for WindowEnd,
	// which output tuples do not carry).
	Attr   int
	Type   string   // SQL type of the values: BIGINT, DOUBLE, UUID, VARCHAR, TIMESTAMP(3), BOOLEAN, ...
	Labels []string // an ENUM column's labels, by code
}

// Specs returns the queries' engine specs, in order, for engine.Start; set
// their Windows and Tuples sinks before starting.
func (p *Program) Specs() []engine.Spec {
	s := make([]engine.Spec, len(p.Queries))
	for i, q := range p.Queries {
		s[i] = q.Spec
	}
	return s
}

// Output refers to the output of the query or view called name, for a
// Go-built spec appended to Specs to read (its Upstream, with the view's
// Output schema).
func (p *Program) Output(name string) (engine.Ref, error) {
	for i, q := range p.Queries {
		if q.Name == name {
			return engine.Output(i), nil
		}
	}
	return engine.Ref{}, fmt.Errorf("sql: no query or view %q", name)
}

// Source returns the source called name, or nil.
func (p *Program) Source(name string) *Source {
	for _, s := range p.Sources {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Table returns the table called name, or nil.
func (p *Program) Table(name string) *Table {
	for _, t := range p.Tables {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Query returns the query called name, or nil.
func (p *Program) Query(name string) *Query {
	for _, q := range p.Queries {
		if q.Name == name {
			return q
		}
	}
	return nil
}

func (t sqlType) String() string {
	if t.name != "" {
		return t.name
	}
	switch t.kind {
	case tyInt:
		return "INT"
	case tyBigint:
		return "BIGINT"
	case tyReal:
		return "REAL"
	case tyDouble:
		return "DOUBLE"
	case tyUUID:
		return "UUID"
	case tyBytes:
		return fmt.Sprintf("BYTES(%d)", t.size)
	case tyEnum:
		q := make([]string, len(t.labels))
		for i, l := range t.labels {
			q[i] = "'" + strings.ReplaceAll(l, "'", "''") + "'"
		}
		return "ENUM(" + strings.Join(q, ", ") + ")"
	case tyString:
		return "VARCHAR"
	case tyTimestamp:
		return "TIMESTAMP(3)"
	case tyBool:
		return "BOOLEAN"
	}
	return "?"
}

// attrType is the model's type and size of a column type.
func (t sqlType) attrType() (query.Type, int) {
	switch t.kind {
	case tyInt, tyEnum, tyBool:
		return query.Int32, 4
	case tyBigint, tyTimestamp:
		return query.Int64, 8
	case tyReal:
		return query.Float32, 4
	case tyDouble:
		return query.Float64, 8
	case tyString:
		return query.String, query.StringSize
	}
	return query.Bytes, t.size
}

// attr is the attribute of a column of type t called name at off.
func (t sqlType) attr(name string, off int) query.Attribute {
	ty, size := t.attrType()
	a := query.Attribute{Name: name, Type: ty, Offset: off, Size: size}
	switch t.kind {
	case tyTimestamp:
		a.Logical = query.Time
	case tyBool:
		a.Logical = query.Boolean
	}
	return a
}

// value is the type of the values of a column of type t in expressions.
func (t sqlType) value() query.ValueType { return t.attr("", 0).Value() }

func (t sqlType) isBytes() bool { return t.kind == tyUUID || t.kind == tyBytes }
