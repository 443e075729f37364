// Package sql compiles saber-hx's streaming SQL (the Flink SQL / RisingWave
// spelling, plus SABER's CQL windows) into the engine's query model.
//
// Compile takes a text of statements separated by semicolons and returns a
// Program: the sources and tables with their options and tuple layouts, and
// the queries in dependency order as engine.Specs (query.Query or
// query.WindowJoin, with Upstream edges to views), each with its sink and its
// output columns. The caller loads the tables' rows (Table.LoadCSV or
// SetRows), sets each Spec's Windows/Tuples sinks, may append Go-built specs
// (which can read a view through Program.Output, with the view's
// Query.Output schema), and starts the engine. Every error is an *Error naming the line and column;
// Error.Caret shows the line with a caret under the position.
//
// # Statements
//
//	CREATE SOURCE name (col type [NOT NULL], ... [, name AS PROCTIME()]
//	    [, WATERMARK FOR col AS col [- INTERVAL 'n' unit]])
//	  WITH (connector = 'file' | 'stdin' | 'generator' | 'kafka' | 'go', ...);
//	CREATE TABLE name (col type [NOT NULL], ... [, PRIMARY KEY (col, ...) NOT ENFORCED])
//	  WITH (connector = ..., ...);
//	CREATE [MATERIALIZED] VIEW name AS SELECT ...;
//	CREATE SINK name AS SELECT ... WITH (connector = 'file' | 'stdout' | 'kafka' | 'redis', ...);
//	INSERT INTO table [(col, ...)] SELECT ...;
//	CREATE FUNCTION name AS 'class' [LANGUAGE ...];  -- Flink's UDF declaration
//	SELECT ...;    -- its sink is stdout
//
// CREATE FUNCTION declares a function saber-hx has built in (Nexmark's
// COUNT_CHAR) or that the Go program embedding it registered by name
// (query.RegisterFunc: a scalar function written in Go, called per row in
// the kernels and by the reference evaluator alike): it binds the name
// and changes nothing else; any other name is refused.
//
// CREATE STREAM is CREATE SOURCE; CREATE TEMPORARY is CREATE. A CREATE
// TABLE is, by its connector and its use: a sink table where an INSERT
// INTO names it or its connector is 'blackhole', 'print', 'stdout' or
// 'redis'; else a static table with connector = 'file' (rows loaded
// before the run, joined to streams); else (Flink's 'filesystem', which
// is 'file', 'kafka', 'stdin', 'generator', 'go') a source, as CREATE
// SOURCE declares one; a 'filesystem' table that a query joins FOR
// SYSTEM_TIME AS OF is static too. PRIMARY KEY ... NOT ENFORCED is
// accepted and ignored (nothing is upserted). A file connector's path may
// be a file: URI of this machine, as Flink's are (file:///p,
// file://localhost/p, file:/p). A WITH list written with Flink's
// connector descriptors of before its version 1.11 ('connector.type' =
// 'filesystem', 'connector.path', 'format.type', 'connector.topic',
// 'connector.properties.*', as Nexmark's q13 declares its side input)
// reads them as connector, path, format, topic and properties.*; their
// other options are refused by name, and an error names an option as the
// list writes it ('connector.path', not path).
//
// # Types
//
//	INT, INTEGER, SMALLINT, TINYINT   int32 (SMALLINT and TINYINT hold any int32: the range is not checked)
//	BIGINT                            int64
//	REAL, FLOAT                       float32
//	DOUBLE, DOUBLE PRECISION          float64
//	DECIMAL(p, s), NUMERIC, DEC       float64: computed as DOUBLE (binary floating point, not decimal); a CAST to it
//	                                  rounds to s decimals (0 without s) as Flink's, halves away from zero; p is not enforced;
//	                                  a value inserted into a DECIMAL column is not rounded (Flink's would be: CAST it)
//	VARCHAR, VARCHAR(n), STRING, TEXT, CHARACTER VARYING(n)
//	                                  a string of any length (n is accepted, not enforced), a 16-byte view (package strview)
//	TIMESTAMP, TIMESTAMP(p), TIMESTAMP(p) WITHOUT TIME ZONE, TIMESTAMP_LTZ(p),
//	TIMESTAMP(p) WITH LOCAL TIME ZONE, TIMESTAMPTZ
//	                                  int64 milliseconds since the epoch, UTC (query.Time): any precision 0-9 is stored as ms;
//	                                  a CAST to TIMESTAMP(p) or TIMESTAMP_LTZ(p) with p < 3 floors the time to p digits of
//	                                  the second's fraction, as Flink's (toward the past before 1970 too, where Flink's cast
//	                                  of a TIMESTAMP truncates its epoch milliseconds toward zero), and so does an INSERT
//	                                  INTO such a column (Flink casts to the sink's type); it still prints as .000
//	BOOLEAN, BOOL                     int32 0 or 1 (query.Boolean)
//	UUID                              16 bytes
//	BYTES(n)                          n bytes
//	ENUM('a', 'b', ...)               an int32 code by position, compared with its labels: k = 'b'; two ENUMs of
//	                                  different labels compare by label (ordered as the right one's labels)
//
// In expressions integers are int64 and floats float64 (query.Expr).
// DATE, TIME, CHAR(n) (which pads), ROW, ARRAY, MAP and MULTISET are
// refused at the type.
//
// NULL: a column of a CSV or JSON source (file, stdin, go, kafka) or table
// can be NULL (a JSON member missing or null, an empty CSV field but a
// VARCHAR's, which is the empty string) unless declared NOT NULL; the
// event time never is. Columns of binary and generator sources are never
// NULL (their records are their tuples). A nullable column has a NULL
// bit (query.Attribute.NullBit) in the bytes after the columns. NULL
// follows SQL (query's sqlexpr.go): operators and functions of a NULL are
// NULL, comparisons with NULL are not true, WHERE, HAVING, CASE WHEN and
// FILTER drop what is not TRUE, aggregates skip NULLs. A key that can be
// NULL takes 4 bytes more of the 16 of GROUP BY's keys: declare NOT NULL
// what never is.
//
// Source options: connector; for file and stdin: path (file), format
// ('binary', the default, 'csv' or 'json'), tuple_size (binary), header
// (csv), time_unit ('s', 'ms' the default, 'us', 'ns'), on_error ('fail',
// the default, or 'skip'); for generator: workload (a workloads name, whose
// layout the columns must have), tuples_per_ms (event-time rate), seed,
// rate (tuples per second of wall-clock time; without it, as fast as it
// can); for kafka: brokers ('host:port' separated by commas; Flink's
// properties.bootstrap.servers is the same) and topic (required), group
// (a consumer group whose offsets are committed; without one nothing is
// committed; Flink's properties.group.id), start ('earliest', the default,
// or 'latest': where to begin without a committed offset; the group's
// committed offsets are read wherever it has them), or in its place
// Flink's scan.startup.mode as Flink reads it: 'earliest-offset' or
// 'latest-offset' begin at the partitions' first record or end whatever
// the group committed (the group still commits, and the source reads
// every partition itself, as Flink does, not the group's share of them),
// 'group-offsets' at the group's committed offsets (it needs a group);
// where a partition has none, properties.auto.offset.reset (which
// applies to 'group-offsets' only) says where to begin: 'earliest',
// 'latest' or 'none', the default, with which the run fails naming the
// partitions; 'timestamp' and 'specific-offsets' are refused. A run
// restored from a checkpoint goes on from the checkpoint's positions
// whatever the mode, but a position outside the log (retention, a topic
// made again), which is moved and logged (docs/operations.md). Source.Start holds where to begin, and
// Source.KafkaCommitted what the committed offsets decide ("use",
// "ignore" or "require"). Then format ('json', the default, 'csv'
// without a header, or 'binary': the value is the tuple), tuple_size
// (binary), idle_timeout (a Go duration, '5s' by default: how long a
// partition with nothing buffered holds the merge back), fetchers (without
// a group: how many consumer clients read the partitions, each with a
// goroutine that decodes what it polls, 1 by default; more make fetching
// and decoding grow with the cores, but partitions that went idle
// together may then wake in different polls, and a record of one still
// idle when another woke may be late), isolation_level
// ('read_committed', the default: only the records of committed
// transactions, and StopAtEnd ends at the last stable offset; or
// 'read_uncommitted': every record, aborted transactions' included;
// Flink's properties.isolation.level), on_error and time_unit as for
// files, and the security options below. They are kept in Source fields
// (Brokers, Topic, Group, Start, IdleTimeout, Fetchers, IsolationLevel,
// KafkaSecurity); every option is also kept as written in Source.Options
// (passwords as ***). An unknown option or a bad value is an error at it.
// Option names may be quoted ('connector' = 'kafka').
//
// time_unit is the unit of a BIGINT event time and of the epoch numbers a
// TIMESTAMP column of a CSV or JSON record may hold (a TIMESTAMP is also
// read as RFC 3339 or SQL's 2024-03-01 10:00:01.250, UTC; Source.Layout
// carries the unit to the decoders).
//
// A column name AS PROCTIME() (Nexmark declares one) is a TIMESTAMP
// that no record holds: the reader of the source fills it with the wall
// clock as it ingests each tuple (Source.ProcTime names it; Layout leaves
// it out; csv and json only). A window over it, in a source without a
// WATERMARK on another column, is a processing-time window. Other computed
// columns (name AS expr) and METADATA columns are refused.
//
// Sink options: connector; file (Flink's 'filesystem' too): path; file,
// stdout and print: format ('csv', the default, or 'json'); kafka: brokers
// (or properties.bootstrap.servers) and topic (required), format
// ('json', the default, or 'csv'), key (an output column whose text is
// each record's key; none by default) and the security options below;
// redis: addr ('host:port') or url (below), layout, flush (a Go
// duration, '1s' by default: how often writes are sent). Layout 'hash' (the default) writes each row as a hash
// whose key is key, a template over the output columns in braces
// ('cm1:{window_start}:{cat}'; every brace names an output column, at
// least one does, '{{' and '}}' are literal braces), holding fields (a
// comma list of output columns; by default every column the key does not
// name). Layout 'ysb' writes YSB's Redis layout and needs the output
// columns campaign_id (a UUID) and window_start and a count: seen_count
// where there is one, else the first aggregate (Sink.Fields holds its
// name); key and fields do not apply. They are kept in Sink fields
// (Brokers, Topic, Key, KafkaSecurity, Addr, Redis, Layout, KeyTemplate,
// Fields, Flush) and as written in Sink.Options (passwords as ***).
// A sink table's connector may also be 'blackhole' (no options: the rows
// are counted, in the run's summary, and written nowhere) or 'print'
// (format: the rows go to standard output as a plain SELECT's do, CSV
// with a header of the table's columns, or JSON lines).
//
// A file sink also accepts Flink's 'sink.rolling-policy.rollover-interval'
// and 'sink.rolling-policy.check-interval' (durations, checked) and does
// not honour them: its files roll at every checkpoint
// (--checkpoint-interval: a part per epoch, or per partition and epoch),
// and without checkpoints a file (or a partition's) is one file, written
// at the end of the run. The rows are the same; only how many files hold
// them differs. 'sink.rolling-policy.file-size' and
// 'sink.rolling-policy.inactivity-interval' are refused.
//
// PARTITIONED BY (col, ...), after a 'filesystem' (or 'file') sink
// table's column list, makes its path a directory and writes each row
// under path/col=value/... (Flink's filesystem connector, Hive's
// layout): one level per partition column, in order; the value's text
// (a TIMESTAMP's as Flink's, java.time's 2015-07-15T12:34[:56[.789]])
// with the control characters, DEL and " # % ' * / : = ? \ { [ ] ^
// escaped as %XX (as Flink's PartitionPathUtils does: '00:01' is
// 00%3A01); a NULL, empty or blank value is 'partition.default-name'
// (__DEFAULT_PARTITION__ by default). A partition's files hold the other
// columns, as the file sink writes them (CSV without a header, or JSON
// lines): without checkpoints one file, "data", renamed into place at
// the end of a run that succeeds (a run replaces the "data" of each
// partition it writes); under --checkpoint-dir a part "data.part-EPOCH"
// per checkpoint epoch in which the partition had rows, committed with
// the checkpoint and settled on a restart as a file's parts are
// (docs/operations.md). Sink.Partition holds the partitioning.
//
// A partition is committed by 'sink.partition-commit.trigger' =
// 'partition-time' and 'sink.partition-commit.policy.kind' =
// 'success-file' (both or neither): once the watermark is past its time
// plus 'sink.partition-commit.delay' (a Flink duration, '1 min', '30 s',
// '500ms'; 0 by default), an empty file named
// 'sink.partition-commit.success-file.name' (_SUCCESS by default) is
// written in its directory, after its files are committed: under
// checkpoints at the commit of the first checkpoint whose watermark is
// past it, without them at the end of the run. At the end of a run (its
// input's, or --duration's) every partition is committed, as Flink does
// at the end of a bounded input. A partition's time is
// 'partition.time-extractor.timestamp-pattern' with each $col replaced by
// its value ('$dt $hm:00'; by default the first partition column's
// value), read as 'yyyy-MM-dd HH:mm:ss' or 'yyyy-MM-dd' in UTC, as
// Flink's default extractor reads it (fields of one or two digits, a
// fraction of the second, a field out of range carried over); a
// partition whose time does not read (the default partition) is
// committed only at the end. The watermark is the sink's own: the
// largest event time of the rows written less the WATERMARK delay of the
// source they come from. It depends on the rows alone (the same files
// for any number of workers), and is never ahead of the engine's (the
// rows are the source's tuples, in input order), lagging it only where
// the query filters rows out; so 'partition-time' takes a query that
// filters and projects a source (or a view that passes its tuples on;
// over a view of an aggregation the rows' times are their windows'
// starts, behind the engine's watermark), and refuses an aggregation's
// or a join's own rows, which are new tuples. A partition with rows
// written after a checkpoint began waits for the next checkpoint's
// commit, so that its success file follows every file it has.
// Refused: 'process-time' (Flink's default trigger: the wall clock) and
// the policy without a trigger; the 'metastore' and 'custom' policies;
// 'partition.time-extractor.kind' other than 'default',
// 'partition.time-extractor.timestamp-formatter' other than
// 'yyyy-MM-dd HH:mm:ss', 'sink.partition-commit.watermark-time-zone'
// other than 'UTC'; PARTITIONED BY on another connector, on a source or
// a table that is read, naming a column the table does not have or
// twice, or every column.
//
// INSERT INTO table SELECT ... writes the SELECT's columns to the sink
// table's, by position (or in the order INSERT INTO table (cols) lists
// every column): each value whose type is not its column's is cast to it
// (query.Cast's rules: INT to DOUBLE, anything to VARCHAR, a string
// parsed, integers and timestamps as milliseconds, ...); one that does
// not convert (a UUID to a BIGINT, a BOOLEAN to a TIMESTAMP) is refused
// naming the column. The query takes the table's name, its columns the
// table's names and types; NOT NULL in a sink table is not checked. A
// sink table is written by one INSERT INTO.
//
// # Secured connections
//
// Option names are names, dotted or not, or quoted: properties.sasl.mechanism,
// 'properties.sasl.mechanism' and "properties.sasl.mechanism" are one
// option. Kafka sources and sinks take RisingWave's (and librdkafka's)
// options: properties.security.protocol ('PLAINTEXT', the default,
// 'SSL', 'SASL_PLAINTEXT' or 'SASL_SSL'); with SASL_*,
// properties.sasl.mechanism ('PLAIN', 'SCRAM-SHA-256' or
// 'SCRAM-SHA-512'), properties.sasl.username and properties.sasl.password
// (all three required); with SSL and SASL_SSL,
// properties.ssl.ca.location (a PEM file of the authorities that sign
// the brokers' certificates; the system's without it),
// properties.ssl.certificate.location and properties.ssl.key.location
// (PEM files of the client's certificate and key, for brokers that
// require one: mutual TLS; both or neither), and
// properties.ssl.endpoint.identification.algorithm ('https', the
// default: the certificate must name the broker, or 'none': the chain is
// checked, the name is not). An option of SASL without a SASL protocol,
// or of TLS without a TLS protocol, is an error. Every client of the
// source or sink (the consumer, the offset commits, a checkpointed
// run's transactions) uses them: internal/security's Kafka settings.
//
// Redis sinks take username (an ACL user; it needs password), password
// (the user's, or the server's requirepass), tls ('true' or 'false', the
// default), tls.ca, tls.cert and tls.key (PEM files, as Kafka's; they
// need tls = 'true'), tls.server_name (the name the server's certificate
// must have; addr's host by default); or url =
// 'redis://[user[:password]@]host[:port][/db]' in place of addr
// ('rediss://' for TLS; the port is 6379 by default; a user without ':'
// is a password, as redis-cli reads it), with the tls.* options where
// they apply. The Sink's Redis field holds the connection's settings.
//
// Any option's value may hold ${NAME}: the environment variable NAME's
// value, read when the text is compiled (CompileEnv takes another
// environment); a variable not set is an error at it, naming it and the
// option; $${ is a literal ${; a value read is not read again. Write
// passwords so, 'properties.sasl.password' = '${KAFKA_PASSWORD}', and
// brokers as Nexmark's files do, brokers = '${BOOTSTRAP_SERVERS}'.
//
// A password (password, properties.sasl.password, the password in url)
// is never shown: Options, Explain and the settings' String forms show
// ***, errors do not quote it, and Error.Caret shows the line with ***
// in its place. The settings hold it as a security.Secret, which prints
// as *** however it is printed. Error.Caret hides so the value of every
// option whose name holds password, passwd, pwd, secret, jaas, token,
// credential or private, or a part (between '.', '_' or '-') beginning
// or ending with key where no connector takes the option
// (properties.ssl.key.pem, api_key; not a sink's key column, tls.key or
// properties.ssl.key.location, which are shown), and in a WITH list the
// value of every option that no connector takes, whatever its name: a
// Kafka client property the engine does not read
// (properties.sasl.jaas.config) or a misspelt password
// (properties.sasl.pasword) is refused without being echoed.
//
// Layout and time: with format = 'binary' the declared order is the byte
// layout, and the event time is the first column, a BIGINT or a TIMESTAMP
// (the model reads it at offset 0). For csv and json the compiler lays the
// tuple out: the event time first (WATERMARK FOR's column, else the one a
// window over the source names, else the first TIMESTAMP, else the first
// BIGINT), then the others by size, then the NULL bits; the tuple is
// padded to a power of two (so that any power-of-two task size holds
// whole tuples). Intervals are converted into the event time's unit:
// time_unit for a BIGINT, milliseconds for a TIMESTAMP. WATERMARK FOR ts
// AS ts - INTERVAL 'n' unit delays every time window over the source (or
// over a view that filters or projects its tuples, as Flink's watermarks
// pass through it) by that much: the watermark is the largest event time
// seen minus the delay, as Flink's, and a window [s, e) closes when it
// reaches e - 1 ms, the window's last millisecond, where Flink fires it
// (query.Window.Delay is the delay less 1 ms; a BIGINT time in seconds
// closes at e, a whole second having no last millisecond). Without a
// delay (WATERMARK FOR ts AS ts, or none) a window closes when the
// largest event time reaches e, 1 ms after Flink's, as with ts - INTERVAL
// '1' MILLISECOND: a tuple on a window's last millisecond, after another
// there, is late in Flink and counted here. A tuple is late when the
// window that first contains it had closed before it (so a tuple late for the
// first window of a HOP is in none of them, where Flink's slicing windows
// still count it in those still open: a window is assembled from panes,
// each whole or not at all); a ROWS window over a
// source with a delay is refused (a delay in time cannot apply to counts
// of tuples), and so is one over a view that passes such a source's
// tuples on (filtered, projected, joined with a table), which has the
// delay too.
//
// The watermark of a window is the largest event time of its query's own
// input. A view, or a part the compiler makes of a query (`explain`
// lists them: a join with a static table under an aggregation that
// groups by or sums the table's values, for one), passes on only the
// tuples it outputs: one it filters out or leaves unmatched
// advances the watermark of the windows over it no further, where
// Flink's watermark, made at the source, passes filters by. A tuple out of
// order behind a filtered one may then be counted here where Flink finds
// it late. The same condition in the windowed query's own WHERE (or ON)
// advances the watermark as Flink's does.
//
// # Queries
//
//	SELECT [items | * | qual.* | *, items] FROM from [WHERE cond] [GROUP BY exprs] [HAVING cond]
//
// An output column is named by its AS, else by its column (x), COUNT
// (count), another aggregate of a column (sum_x) or a window function
// (window_start), else exprN (its position); a name without AS that an
// earlier item or an alias of the list took gets the least number after
// it that makes it unique (x0, x1, ...), as Flink (Calcite) names it.
// Two items with the same AS are refused.
//
// from is one of
//
//	src                                              -- no window: a stateless query (or GROUP BY's window)
//	TUMBLE(src, time_col, size)                      -- RisingWave's table functions
//	HOP(src, time_col, slide, size)                  -- slide before size
//	SESSION(src [PARTITION BY k, ...], time_col, gap)
//	TABLE(TUMBLE(TABLE src, DESCRIPTOR(time_col), size))        -- Flink's window TVFs
//	TABLE(HOP(TABLE src, DESCRIPTOR(time_col), slide, size))
//	TABLE(SESSION(TABLE src [PARTITION BY k, ...], DESCRIPTOR(time_col), gap))
//	src [RANGE size [SLIDE slide]]                   -- CQL, sizes as intervals
//	src [ROWS n [SLIDE m]]
//	(SELECT ...) [AS] alias                          -- a subquery: an anonymous view
//	... JOIN table ON src.col = table.col            -- a static table
//	... JOIN table FOR SYSTEM_TIME AS OF src.p ON expr = table.col  -- Flink's lookup join
//	a [window] JOIN b [window] ON cond               -- a window join of two streams
//
// each optionally followed by [AS] alias; sizes are INTERVAL 'n' unit,
// units MILLISECOND, SECOND, MINUTE, HOUR, DAY (and their plurals), or
// RisingWave's INTERVAL 'n unit' (one length, one unit: '10 minutes'), as
// every INTERVAL may be written.
// GROUP BY may hold the window instead, as Flink's group windows:
// GROUP BY TUMBLE(time_col, size), HOP(time_col, slide, size) or
// SESSION(time_col, gap), with the keys. A SESSION in FROM is one
// session over the stream without PARTITION BY (k, ... or (k, ...)), else
// one per key, and its GROUP BY holds window_start, window_end and
// exactly the PARTITION BY columns (Flink's rule: other keys are
// refused), which are the stream's (src.k or k; not a joined table's);
// GROUP BY SESSION(time_col, gap), keys is one per group. A
// tuple of a session window is late where its own session would have
// closed and it joins no open session of its key (Flink's merging
// windows judge the merged one). Keywords, function names and units are
// case-insensitive; the names of sources, tables, views and columns are
// case-sensitive, as Flink's are (s.Val is not s.val); "name" and `name`
// quote a name.
//
// Expressions: columns (qualified or not); integer, decimal and string
// constants, TRUE, FALSE, NULL; TIMESTAMP '2024-01-01 00:00:00[.000]'
// (and DATE '2024-01-01', its midnight), UTC; INTERVAL 'n' unit, an
// integer of milliseconds (ts + INTERVAL '1' SECOND is a timestamp);
// + - * / % (MOD), || (CONCAT); = <> != < <= > >= (a string literal
// compared with an ENUM is its code; strings compare byte-wise); AND, OR,
// NOT (pushed down to the comparisons where it can be); x [NOT] BETWEEN a
// AND b (inclusive); x [NOT] IN (v, ...); s [NOT] LIKE 'pattern' [ESCAPE
// 'c'] (a constant pattern); x IS [NOT] NULL, b IS [NOT] TRUE|FALSE; CASE
// WHEN c THEN v ... [ELSE e] END and CASE x WHEN v THEN r ... END; CAST(x
// AS type) and TRY_CAST (the same: NULL where a string does not parse;
// to a numeric type, VARCHAR, TIMESTAMP or BOOLEAN; an ENUM to VARCHAR is
// its label; INT is cast as BIGINT; a string to DOUBLE is read as
// Java's Double.parseDouble reads it, to REAL as Float.parseFloat does
// (rounded to the float32 once), as Flink's: NaN, Infinity and
// -Infinity spelt so, a number past the range ±Infinity ('1e400' is
// Infinity, not NULL), a d or f suffix taken); EXTRACT(unit FROM ts) (YEAR,
// QUARTER, MONTH, WEEK, DAY, DOW, DOY, HOUR, MINUTE, SECOND, MILLISECOND);
// SUBSTRING(s, start[, len]) and SUBSTRING(s FROM start [FOR len]);
// TRIM([BOTH | LEADING | TRAILING] [' '] FROM s) (TRIM, LTRIM, RTRIM);
// IF(c, a, b), NULLIF(a, b), IFNULL(a, b) (COALESCE); and the scalar
// functions of query.Funcs, whose doc comment has their rules: ABS,
// FLOOR, CEIL (CEILING), ROUND, MOD, LOWER, UPPER, TRIM, LTRIM, RTRIM,
// CHAR_LENGTH (CHARACTER_LENGTH, LENGTH), SUBSTRING (SUBSTR), CONCAT,
// SPLIT_INDEX, REGEXP_EXTRACT (a constant pattern, checked here), COUNT_CHAR,
// YEAR, QUARTER, MONTH, WEEK, DAY, DAYOFMONTH, DAYOFWEEK, DAYOFYEAR, HOUR,
// MINUTE, SECOND, MILLISECOND, DATE_FORMAT (a constant format, checked
// here), COALESCE. LOWER and UPPER apply Unicode's full case mapping as
// Java's toLowerCase and toUpperCase do (UPPER('straße') is 'STRASSE',
// LOWER('ΟΔΟΣ') 'οδος'), a final Σ decided by Unicode's Final_Sigma rule
// where Java uses word boundaries ('Α_Σ' lowers to 'α_σ' here, 'α_ς' in
// Java). DATE_FORMAT's y is the year of the era (1 BC is 1), u the
// proleptic year (1 BC is 0), as in Java; CAST(ts AS VARCHAR) writes a
// year past 9999 or before 0 with a sign and at least four digits
// (+10000-01-01 00:00:00.000), as java.time does (Flink keeps only the
// year's last four digits). Aggregates: COUNT(*), COUNT(x) (its non-NULL values),
// SUM (of integers a BIGINT, an INT's too, as RisingWave's, where Flink
// keeps INT; it wraps past the BIGINT range, as Flink's does), AVG (a
// DOUBLE, of integers too: RisingWave and PostgreSQL give the fraction,
// where Flink's AVG of an INT is an INT, truncated; of integers it divides
// that wrapping SUM), MIN,
// MAX (MIN and MAX of numbers and timestamps), each with an
// optional FILTER (WHERE cond) (query.Aggregate.Filter), and
// COUNT(DISTINCT x) (below).
//
// A query without aggregates is a projection of any expressions (a UUID
// or BYTES value as a column), or SELECT * (the input tuples), after
// WHERE; SELECT *, x and qual.* expand to the columns. An aggregation
// (aggregates, GROUP BY or HAVING) needs a window. GROUP BY takes columns
// and expressions of integers, timestamps, booleans and strings, UUID
// and BYTES columns (at most 16 bytes of keys: an int32 4, another integer
// or time 8, a string 4 (its number in the query's dictionary), a boolean
// 1, a NULL-able one 4 more); window_start and window_end in GROUP BY say
// nothing (the window is FROM's). A VARCHAR column of a CSV or JSON
// source that a query over the source itself, without WHERE, groups by
// (or counts the distinct values of) is dictionary-encoded (Source.DictNumbers, laid out before the queries
// compile): the decoders write each string's number beside its view, and
// such queries group by the number instead of hashing the string. Its
// select list holds any expressions over the window's bounds
// (window_start, window_end, window_time = window_end - 1 ms, TUMBLE_START,
// TUMBLE_END, TUMBLE_ROWTIME, HOP_START, HOP_END, HOP_ROWTIME,
// SESSION_START, SESSION_END, SESSION_ROWTIME, whose arguments must be
// GROUP BY's window's), the GROUP BY keys (a column, or an expression
// written as in GROUP BY) and aggregates: SUM(b) * 1.0 / SUM(n),
// COUNT(*) + 1, CAST(SUM(x) AS DOUBLE), CASE over a key. GROUP BY without
// aggregates (SELECT k ... GROUP BY k) outputs the groups. HAVING uses
// aggregates (by alias or written again; one not selected is computed
// hidden) and GROUP BY columns; a name is the input's column (a GROUP BY
// column) first, a select-list alias only where no column has it (in
// SELECT k AS v, SUM(v) AS k ... GROUP BY k HAVING k > 6, k is the key).
//
// Floats: REAL (FLOAT) values are float32s: a REAL column, CAST(x AS
// REAL) (which rounds a DOUBLE, an integer or a string's number to the
// nearest float32, once, as Java's Float.parseFloat and (float) do: a
// string or a BIGINT is not rounded to a double first), MIN or MAX of a
// REAL and a REAL sink column print as the float32 (0.1, not
// 0.10000000149011612), in the outputs, in CAST(x AS VARCHAR) and in ||;
// other float expressions over a REAL (arithmetic, SUM, AVG, CASE) are
// DOUBLE, computed in float64 (Flink computes REAL arithmetic in
// float32). MIN and MAX of a float skip NaN: NaN only where every value
// is, MIN preferring -0 to +0 and MAX +0 to -0 (Flink keeps a NaN that
// comes first in a group; partial results merge in any grouping here,
// and that rule is not associative). NOT of a float comparison is its
// IEEE negation: NOT (x < 1) and x NOT BETWEEN a AND b are TRUE where x
// is NaN (Calcite rewrites both into the opposite comparisons, FALSE).
// CAST(s AS BOOLEAN) reads t, true, y, yes, 1 as TRUE and f, false, n,
// no, 0 as FALSE, in any case, spaces around them ignored; another
// string is NULL. INTERVAL arithmetic on a BIGINT event time, or on a
// window's bound over one, is in the source's time_unit (with time_unit
// = 's', window_start + INTERVAL '1' MINUTE adds 60); an integer whose
// unit is not known (another BIGINT column, a literal, a view's column
// computed from a time) takes no INTERVAL: CAST it AS TIMESTAMP
// (milliseconds) first. A TIMESTAMP takes intervals in milliseconds.
//
// Where the select list is the window's start (and end, but in a view),
// group keys and aggregates as they are, the aggregation is one
// query.Query; else it is two: the aggregation, and a stateless query
// over its output (engine.Spec.Upstream) that computes the select list
// (window_end as window_start plus the size; a session's end is its own,
// an attribute of the session's output). The first is a part of the
// second (Query.Part: named query$1, query$2, ..., without a sink); so
// are a subquery in FROM, the join under a query over a window join, and
// the lookup join under an aggregation. Program.Queries lists the parts
// before the queries they are part of.
//
// COUNT(DISTINCT x) over a TUMBLE, HOP or RANGE window is two
// aggregations: the inner one groups by the keys and x in the window,
// with the other aggregates' partial values (COUNT, SUM, MIN, MAX, and
// AVG as a SUM and a COUNT, their FILTERs kept); the outer one reads the
// inner's rows in a tumbling window of the inner window's slide over
// their window starts, groups by the keys, and counts the rows whose x is
// not NULL, sums the counts and sums, takes the MIN of MINs and the MAX of
// MAXes (AVG: the sum over the count). MIN(DISTINCT x) and MAX(DISTINCT x)
// are MIN and MAX.
//
// A static join (ON stream.col = table.col: UUID or BYTES of one size,
// integers (ENUMs of the same labels), timestamps or strings; a NULL key matches no row, but a NULL
// UUID or BYTES key is its zero bytes) runs as the model's aggregation
// join (query.StaticJoin.As: the engine's dense groups, the fused kernel
// for YSB) where the query is an aggregation over a UUID or BYTES key
// that groups by one table column of UUID or BYTES values alone, or uses
// none; a NULL in that column is refused when the table loads. Anything
// else is a lookup join (query.StaticJoin.Values: the table's columns the
// query uses, of any type and NULL-able, read after the stream's): the
// query itself without aggregates, or a part under an aggregation (which
// then counts the unmatched tuples there).
//
// JOIN table FOR SYSTEM_TIME AS OF s.p, Flink's lookup (temporal) join,
// is the join with the table where p is the stream's processing time (a
// column AS PROCTIME() or a view's PROCTIME() AS p): the table is loaded
// once before the run and never changes, so a lookup at any processing
// time finds the same rows. AS OF an event time (Flink's join with a
// versioned table's history) is refused: a static table has no versions.
// The stream's side of ON may be an expression of its columns (ON
// MOD(s.auction, 10000) = t.key): an integer or string one the lookup
// kernel computes as it looks the keys up; one of another type (a
// timestamp's) a part before the join computes beside the columns the
// query reads.
//
// A window join of two streams (the same window on both sides; where
// their WATERMARK delays differ, its windows wait the longer) outputs
// whole pairs for SELECT *; with a select list, the pairs feed a
// stateless query (a part under it), and with aggregates an aggregation
// in a tumbling window of the join's size over the pairs' left times
// (which needs a tumbling time window).
//
// A view of an aggregation in a TUMBLE or HOP window (or a subquery, or a
// view that keeps its window start) outputs its rows window by window,
// their times the windows' starts. An aggregation over it without a window
// that groups by that time (window_start AS starttime, ... GROUP BY
// starttime) runs in a tumbling window of the slide, which holds the rows
// of one of its windows, the time its window start; a join of two such
// views, of the same slide, whose ON equates their times (or, of the same
// size too, their window ends: window_end AS endtime) runs as a window
// join in the same tumbling window (Nexmark's q5 and q8 as written).
//
// An interval join (Nexmark's q7 as written): a stream S joined, without
// windows, with a view V of TUMBLE windows of size W, where ON and WHERE
// (terms ANDed at their top) bound S's event time by V's window_start or
// window_end plus or minus constants within [start, start + W], as
// S.ts BETWEEN V.window_end - INTERVAL 'W' AND V.window_end. It outputs
// each pair for which ON and WHERE hold, once: a window join in tumbling
// windows of W, S's tuples timed through a part that times a tuple on a
// bound a second time, 1 ms before it, into the window that ends there
// (compile_interval.go). Its windows wait W plus S's watermark delay, so
// that it drops as late only what V's aggregation drops. Flink plans the
// same text as a regular join (its window_end is not a time attribute):
// it keeps every tuple of both sides for good, and joins a tuple of S that
// came after the watermark passed its window too, which this drops. The
// rows are Flink's where no tuple of S is late; the state here is W's.
//
// A regular join (Flink's inner join of two append-only streams without a
// window; Nexmark's q3 and q20 as written): FROM a [INNER] JOIN b ON
// ... WHERE ..., neither side windowed nor a view of windows, whose ON and
// WHERE are the AND of one equality of a column of each side (the key:
// INT or BIGINT of one type on both, or VARCHAR on both, strings equal
// byte for byte) and terms of one side each. It
// outputs every pair for which ON and WHERE hold, once, when the later of
// its two rows arrives, whatever their event times (nothing is late);
// the output is append-only, and a NULL key joins nothing. The rows are
// the same in every run, at any worker count and task size, but their
// order is that of the two inputs' arrivals, which differs from run to
// run (a window join's order does not; --validate compares a regular
// join's rows as a multiset). Each side's
// terms filter it in a part that also keeps only the columns the select
// list reads, before the join keeps its rows; the join keeps every row of
// both sides for good, as Flink's does without a state TTL: its memory
// grows with its inputs (compile_regular.go, kernels.RegularJoin). Its
// pairs have no event time (Flink's regular join outputs no time
// attribute): no window over them. Where a select list names a column of
// both sides, A.x and B.x, the second is named x0 (Calcite's rule).
// Other terms over both sides (a.x < b.x, a.k + 1 = b.k, a second
// equality), a key of another type, and an aggregation over a regular
// join are refused.
//
// A join of more inputs (Nexmark's q23 as written: FROM bid B JOIN person
// P ON P.id = B.bidder JOIN auction A ON A.seller = B.bidder) is the join
// of each input with the join of those before it, as Flink plans it: FROM
// (B JOIN P ON ...) JOIN A ON ..., each join compiled as a two-input one
// (above: regular, or a window join where its sides are windowed),
// refused as such where its shape is not. Each ON reads the inputs
// before it; the join of the first ones passes on only the columns read
// after it, named as a view of a join names them (a name two inputs have
// is qualified: B.extra, P.extra). The inputs before the last are
// sources or views (a subquery or a table there is refused: make it a
// view; a table is joined last); an unqualified column two of them have
// is ambiguous, as in any join, and an input joined twice needs aliases
// (compile_chain.go).
//
// A view that adds a processing time to a csv or json source as it is
// (CREATE VIEW v AS SELECT *, PROCTIME() AS p FROM src, as Nexmark's q12
// writes it; or a subquery, FROM (SELECT *, PROCTIME() AS p FROM src) AS
// b, as q13 does) gives the source a column p AS PROCTIME() visible in
// the view only; a window over p is a processing-time window
// (compile_proctime.go).
//
// A view's output feeds the queries that name it in FROM: its columns are
// its select list (an aggregation's window start is also visible as
// window_start, and a column that is the window start or the input's
// event time as it is stays the event time); a window over a view of an
// aggregation uses window_start as its event time.
//
// Tables (connector = 'file', format 'csv' or 'json') load their rows with
// Table.Load: VARCHAR cells into memory the table keeps (strview's Arena,
// outside the Go heap), TIMESTAMP, BOOLEAN and NULL cells as a source
// reads them; a row whose key is NULL matches nothing; two rows with one
// key are refused.
//
// # Not supported yet (refused with an error saying so, at the construct)
//
// SELECT DISTINCT; GROUPING SETS, ROLLUP and CUBE; SUM, AVG (and COUNT)
// of DISTINCT values but one COUNT(DISTINCT x) per query, over one
// expression x: COUNT(DISTINCT x) with COUNT(DISTINCT y), COUNT(DISTINCT
// x) FILTER (...), COUNT(DISTINCT x) over a ROWS or SESSION window,
// COUNT(DISTINCT k) of a GROUP BY key;
// window functions (OVER: OVER aggregation, and Top-N and deduplication
// with ROW_NUMBER()); CUMULATE windows, the window TVFs' offset
// argument and named arguments (DATA => ...); subqueries in expressions (x IN (SELECT ...), EXISTS, scalar
// subqueries); outer, cross and non-equi joins with a table; outer joins
// of streams; a regular join (a join of two streams without a window)
// but on one equality of an integer or string column of each side with
// terms of one side each (above), and an aggregation over one; interval
// joins but of the shape above (two views of windows joined on their
// window starts run); a join of a windowed stream with one without a window, of
// different windows, or over SESSION windows; an aggregation over a
// window join with a sliding or ROWS window, or over an interval join; a
// ROWS window over an aggregation that runs as a lookup join; ORDER BY,
// LIMIT, OFFSET, FETCH FIRST | NEXT, UNION, INTERSECT, EXCEPT; VALUES (in
// FROM, as a query, or after INSERT INTO: declare a table of the rows);
// WITH (declare a view instead); SIMILAR TO and
// ILIKE; x::type (CAST(x AS type) is supported); DATE, TIME, CHAR(n), ROW, ARRAY, MAP and MULTISET types; METADATA columns and
// computed columns other than PROCTIME(); CAST to UUID, BYTES or ENUM;
// EXTRACT(EPOCH ...) and the units not listed above; TRIM of characters
// other than the space; functions whose value depends on when a query runs
// (NOW, CURRENT_TIMESTAMP, LOCALTIMESTAMP, RAND, UUID, and PROCTIME() in
// a query but a view's or subquery's SELECT *, PROCTIME() AS p over a
// source as it is); FOR SYSTEM_TIME AS OF an event time, or on a stream;
// TUMBLE_PROCTIME and its kin; a window in a query without
// aggregates (a window table function's rows, each with its window's
// bounds, too); two windows in one query (FROM's and GROUP BY's, or two in
// GROUP BY); GROUP BY a float, a constant, or a UUID/BYTES expression;
// group keys wider than 16 bytes; HAVING over a GROUP BY expression (name
// a column); a window over a view's column that is not its event time
// (TUMBLE_ROWTIME's column: the view's event time is window_start); an
// INSERT INTO whose columns or types do not match its table, or a second
// INSERT INTO one table; a WATERMARK on a processing time, and a window
// over the processing time of a source whose WATERMARK names another
// column.
package sql
