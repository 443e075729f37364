package sql

import (
	"fmt"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/query"
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
	// at offset 0), in TimeUnit ("s", "ms", "us" or "ns").
	EventTime string
	TimeUnit  string
	// Watermark is whether WATERMARK FOR was declared; WatermarkDelay is its
	// delay in TimeUnit (always 0 today: the engine's watermark is the
	// largest event time seen, and a delay is refused).
	Watermark      bool
	WatermarkDelay int64
	Connector      string // "file", "stdin", "generator", "kafka" or "go" (fed by the embedding program: package pipeline)
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
	// KafkaSecurity is how a kafka source's connections are secured
	// (properties.security.protocol, properties.sasl.*,
	// properties.ssl.*; the zero value is PLAINTEXT).
	KafkaSecurity security.Kafka
	// Options holds every option as written (keys in lower case; values
	// with their ${NAME} placeholders read, passwords as ***), so that
	// connectors can read their own.
	Options map[string]string
}

// Kind is a column's declared type.
type Kind uint8

const (
	KindInt    Kind = iota + 1 // INT: int32
	KindBigint                 // BIGINT: int64
	KindReal                   // REAL: float32
	KindDouble                 // DOUBLE: float64
	KindUUID                   // UUID: 16 bytes in the order of the text form
	KindBytes                  // BYTES(n): n bytes
	KindEnum                   // ENUM(...): the label's position, int32
)

// Column is a declared column.
type Column struct {
	Name   string
	Kind   Kind
	Type   string // as SQL spells it: INT, BIGINT, REAL, DOUBLE, UUID, BYTES(n), ENUM('a', ...)
	Labels []string
	Attr   query.Attribute // its place in the tuple (in a table's row: columns in declared order)
}

// Table is a CREATE TABLE: a static relation joined to streams. Its rows
// are loaded by the caller (SetRows or LoadCSV) before the engine starts.
type Table struct {
	Name      string
	Line      int
	Columns   []Column
	Connector string // "file"
	Format    string // "csv" or "json"
	Path      string
	Header    bool
	Options   map[string]string
	// uses are the query.StaticTables that the joins with this table read:
	// one per (key, value) pair of columns.
	uses  []tableUse
	types []sqlType
	rows  int
}

type tableUse struct {
	key, value int
	t          *query.StaticTable
}

// RowSize is the bytes of one row for SetRows: the columns in declared
// order, each at Column.Attr.Offset.
func (t *Table) RowSize() int {
	last := t.Columns[len(t.Columns)-1].Attr
	return last.Offset + last.Size
}

// SetRows loads the table's rows (each RowSize bytes) into every query that
// joins it. A key given twice is refused.
func (t *Table) SetRows(rows [][]byte) error {
	size := t.RowSize()
	for i, r := range rows {
		if len(r) != size {
			return fmt.Errorf("table %s: row %d has %d bytes, want %d", t.Name, i, len(r), size)
		}
	}
	for _, u := range t.uses {
		k, v := t.Columns[u.key].Attr, t.Columns[u.value].Attr
		keys := make([][]byte, len(rows))
		vals := make([][]byte, len(rows))
		seen := make(map[string]int, len(rows))
		for i, r := range rows {
			keys[i] = r[k.Offset : k.Offset+k.Size : k.Offset+k.Size]
			vals[i] = r[v.Offset : v.Offset+v.Size : v.Offset+v.Size]
			if j, dup := seen[string(keys[i])]; dup {
				return fmt.Errorf("table %s: rows %d and %d have the same %s", t.Name, j, i, t.Columns[u.key].Name)
			}
			seen[string(keys[i])] = i
		}
		u.t.Keys, u.t.Values = keys, vals
	}
	t.rows = len(rows)
	return nil
}

// Rows is the number of rows loaded.
func (t *Table) Rows() int { return t.rows }

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
	Sink            *Sink
	// Output is the schema of the query's output tuples (Spec.Tuples; an
	// aggregation outputs one tuple per row): see query.Query.OutputSchema.
	Output *query.Schema
	// Columns are the select list's columns, in order (the CSV header).
	Columns []OutputColumn
}

// Sink is where a query's output goes.
type Sink struct {
	Name      string // the CREATE SINK's name; "" for a plain SELECT
	Connector string // "stdout", "file", "kafka" or "redis"
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
}

// ColumnKind says where an output column's values are.
type ColumnKind uint8

const (
	WindowStart ColumnKind = iota + 1 // engine.Window.Start
	WindowEnd                         // engine.Window.End
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
	Type   string   // SQL type of the values: BIGINT, DOUBLE, UUID, ...
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
	}
	return "?"
}

// attrType is the model's type and size of a column type.
func (t sqlType) attrType() (query.Type, int) {
	switch t.kind {
	case tyInt, tyEnum:
		return query.Int32, 4
	case tyBigint:
		return query.Int64, 8
	case tyReal:
		return query.Float32, 4
	case tyDouble:
		return query.Float64, 8
	}
	return query.Bytes, t.size
}

func (t sqlType) isBytes() bool { return t.kind == tyUUID || t.kind == tyBytes }
