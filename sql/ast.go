package sql

// The syntax tree of a SQL text, as the parser produces it.

import "github.com/saber-hx/saber-hx/query"

type ident struct {
	name string
	pos  pos
}

type stmtKind uint8

const (
	stSource stmtKind = iota + 1
	stTable
	stView
	stSink
	stSelect
	stInsert
	stFunction // CREATE FUNCTION name AS 'class': a built-in function's declaration
)

type stmt struct {
	kind    stmtKind
	pos     pos
	name    ident // SOURCE, TABLE, VIEW and SINK; INSERT INTO's table
	cols    []colDef
	wm      *watermark
	opts    []option
	withPos pos // the WITH keyword
	sel     *selectStmt
	// table: CREATE TABLE (not SOURCE or STREAM), whose connector says
	// whether it is a static table, a source or a sink.
	table bool
	// into: INSERT INTO name (cols): the columns named (none: all, in order).
	into []ident
	// partitionBy: CREATE TABLE ... PARTITIONED BY (cols), a filesystem
	// sink's partition columns, in order; partPos is PARTITIONED's.
	partitionBy []ident
	partPos     pos
}

type typeKind uint8

// The declared types. The first seven are Kind's values (Kind(t.kind)).
const (
	tyInt typeKind = iota + 1
	tyBigint
	tyReal
	tyDouble
	tyUUID
	tyBytes
	tyEnum
	tyString
	tyTimestamp
	tyBool
)

// sqlType is a column type as declared.
type sqlType struct {
	kind   typeKind
	size   int      // BYTES(n)
	labels []string // ENUM
	// name is the type as written, where it is not the kind's own
	// spelling (VARCHAR(20), SMALLINT, DECIMAL(10, 2), TIMESTAMP_LTZ(3)).
	name string
	// decimal: a DECIMAL(p, s), a DOUBLE here, whose scale s a CAST to it
	// rounds to.
	decimal bool
	scale   int
	// unit: a TIMESTAMP(p) of p < 3, whose fraction a CAST to it floors
	// to p digits: query.TimestampUnit(p); 0 keeps the milliseconds.
	unit int64
}

type colDef struct {
	name    ident
	typ     sqlType
	typPos  pos
	notNull bool
	// proctime: name AS PROCTIME(), a timestamp the source fills with
	// the wall clock when the tuple is ingested.
	proctime bool
}

type watermark struct {
	pos    pos
	col    ident
	of     ident     // the column in AS col - INTERVAL ...
	delay  *interval // nil: no delay
	delayP pos
}

type option struct {
	key    string
	keyPos pos
	val    string
	valPos pos
	// expanded: val is the text with its ${NAME} placeholders replaced,
	// so its bytes are no longer the text's (positions in it are not).
	expanded bool
	// written is the name as the WITH list gives it where
	// renameLegacyOptions renamed it (connector.path, read as path);
	// "" where key is it.
	written string
}

// name is the option's name as written, for errors.
func (o option) name() string {
	if o.written != "" {
		return o.written
	}
	return o.key
}

// interval is INTERVAL 'n' unit, n in units of unitNs nanoseconds.
type interval struct {
	pos    pos
	n      int64
	unitNs int64
	text   string
}

type winKind uint8

const (
	winNone winKind = iota
	winTumble
	winHop
	winRange   // [RANGE size [SLIDE slide]]
	winRows    // [ROWS n [SLIDE m]]
	winSession // SESSION(src, col, gap) (FROM) or GROUP BY SESSION(col, gap): size is the gap
)

type windowSpec struct {
	kind        winKind
	pos         pos
	timeCol     *ident    // TUMBLE, HOP and SESSION
	size, slide *interval // TUMBLE, HOP, RANGE (slide nil: tumbling); SESSION's gap is size
	rows, step  int64     // ROWS (step 0: tumbling)
	slidePos    pos
	// group: the window is GROUP BY TUMBLE(ts, ...) (Flink's group
	// window), not FROM's.
	group bool
	// partition are SESSION's PARTITION BY columns (FROM's); input names
	// the table function's input, which qualifies them (src.k) as well as
	// FROM's alias does.
	partition []*node
	input     string
}

type fromItem struct {
	name  ident
	alias *ident
	win   windowSpec
	sub   *selectStmt // FROM (SELECT ...): name.pos is its '('
	// asOf is the column of JOIN table FOR SYSTEM_TIME AS OF col (Flink's
	// temporal join); pos: FOR's.
	asOf    *node
	asOfPos pos
}

type selectItem struct {
	star  bool
	qual  string // qual.*
	expr  expr
	alias *ident
	pos   pos
}

type selectStmt struct {
	pos     pos
	items   []selectItem
	from    fromItem
	join    *fromItem
	on      expr
	onPos   pos
	where   expr
	groupBy []expr
	having  expr
	end     pos
	// extraWhere is a term the compiler adds to WHERE (a join key's IS
	// NOT NULL).
	extraWhere query.Expr
	// chain marks the join of a multi-way join's first inputs, a
	// subquery the parser made (parser.moreJoins): its select list, the
	// columns of its inputs read after it, is the compiler's to fill
	// (chainJoin).
	chain bool
}

type exprKind uint8

const (
	eCol exprKind = iota + 1
	eInt
	eFloat
	eString
	eBinary // + - * / % || = <> < <= > >= AND OR
	eNot
	eNeg
	eCall     // an aggregate: COUNT(*), SUM(x), COUNT(DISTINCT x), ... [FILTER (WHERE cond)]
	eFunc     // a scalar function (name lower case), or TUMBLE(...) and its kin in GROUP BY
	eBool     // TRUE, FALSE: b
	eNull     // NULL
	eCase     // CASE [l] WHEN args[2i] THEN args[2i+1] ... [ELSE r] END
	eIn       // l [NOT] IN (args)
	eBetween  // l [NOT] BETWEEN args[0] AND args[1]
	eLike     // l [NOT] LIKE s [ESCAPE esc]
	eIsNull   // l IS [NOT] NULL
	eIsBool   // l IS [NOT] TRUE|FALSE (b)
	eCast     // CAST(l AS typ)
	eInterval // INTERVAL 'n' unit: its milliseconds
	eTime     // TIMESTAMP '...': i milliseconds
)

type expr = *node

type node struct {
	kind     exprKind
	pos      pos
	qual     string // a column's qualifier: src in src.col
	name     string // a column's name, a function's name (lower case)
	op       string // eBinary: "+", "=", "and", ...
	i        int64
	f        float64
	s        string
	b        bool
	l, r     expr // eBinary; eNot, eNeg, eCall, eIn, ... use l
	args     []expr
	not      bool
	esc      rune
	typ      sqlType
	iv       *interval
	star     bool // COUNT(*)
	distinct bool // COUNT(DISTINCT x)
	filter   expr // agg(...) FILTER (WHERE filter)
	parenPos pos
}
