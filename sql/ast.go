package sql

// The syntax tree of a SQL text, as the parser produces it.

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
)

type stmt struct {
	kind    stmtKind
	pos     pos
	name    ident // SOURCE, TABLE, VIEW and SINK
	cols    []colDef
	wm      *watermark
	opts    []option
	withPos pos // the WITH keyword
	sel     *selectStmt
}

type typeKind uint8

const (
	tyInt typeKind = iota + 1
	tyBigint
	tyReal
	tyDouble
	tyUUID
	tyBytes
	tyEnum
)

// sqlType is a column type as declared.
type sqlType struct {
	kind   typeKind
	size   int      // BYTES(n)
	labels []string // ENUM
}

type colDef struct {
	name ident
	typ  sqlType
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
	winRange // [RANGE size [SLIDE slide]]
	winRows  // [ROWS n [SLIDE m]]
)

type windowSpec struct {
	kind        winKind
	pos         pos
	timeCol     *ident    // TUMBLE and HOP
	size, slide *interval // TUMBLE, HOP, RANGE (slide nil: tumbling)
	rows, step  int64     // ROWS (step 0: tumbling)
	slidePos    pos
}

type fromItem struct {
	name  ident
	alias *ident
	win   windowSpec
}

type selectItem struct {
	star  bool
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
}

type exprKind uint8

const (
	eCol exprKind = iota + 1
	eInt
	eFloat
	eString
	eBinary // + - * / = <> < <= > >= AND OR
	eNot
	eNeg
	eCall // an aggregate: COUNT(*), SUM(x), ...
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
	l, r     expr // eBinary; eNot and eNeg and eCall use l
	star     bool // COUNT(*)
	parenPos pos
}
