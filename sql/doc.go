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
//	CREATE SOURCE name (col type, ... [, WATERMARK FOR col AS col [- INTERVAL '0' unit]])
//	  WITH (connector = 'file' | 'stdin' | 'generator' | 'kafka', ...);
//	CREATE TABLE name (col type, ...) WITH (connector = 'file', path = '...', format = 'csv' | 'json', header = 'true');
//	CREATE VIEW name AS SELECT ...;
//	CREATE SINK name AS SELECT ... WITH (connector = 'file' | 'stdout' | 'kafka' | 'redis', ...);
//	SELECT ...;    -- its sink is stdout
//
// Types: INT (int32), BIGINT (int64), REAL (float32), DOUBLE (float64),
// UUID (16 bytes), BYTES(n), ENUM('a', 'b', ...) (an int32 code by
// position, compared with its labels: k = 'b').
//
// Source options: connector; for file and stdin: path (file), format
// ('binary', the default, 'csv' or 'json'), tuple_size (binary), header
// (csv), time_unit ('s', 'ms' the default, 'us', 'ns'), on_error ('fail',
// the default, or 'skip'); for generator: workload (a workloads name, whose
// layout the columns must have), tuples_per_ms (event-time rate), seed,
// rate (tuples per second of wall-clock time; without it, as fast as it
// can); for kafka: brokers ('host:port' separated by commas) and topic
// (required), group (a consumer group whose offsets are committed; without
// one nothing is committed), start ('earliest', the default, or 'latest':
// where to begin without a committed offset), format ('json', the default,
// 'csv' without a header, or 'binary': the value is the tuple), tuple_size
// (binary), idle_timeout (a Go duration, '5s' by default: how long a
// partition with nothing buffered holds the merge back), on_error and
// time_unit as for files, and the security options below. They are kept
// in Source fields (Brokers, Topic, Group, Start, IdleTimeout,
// KafkaSecurity); every option is also kept as written in Source.Options
// (passwords as ***). An unknown option or a bad value is an error at it.
//
// Sink options: connector; file: path; file and stdout: format ('csv', the
// default, or 'json'); kafka: brokers and topic (required), format
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
// as *** however it is printed.
//
// Layout and time: with format = 'binary' the declared order is the byte
// layout, and the event time is the first column, a BIGINT (the model reads
// it at offset 0). For csv and json the compiler lays the tuple out: the
// event time first (WATERMARK FOR's column, else the one a TUMBLE or HOP
// over the source names, else the first BIGINT), then the others by size.
// Intervals are converted into the source's time_unit. WATERMARK FOR ts AS
// ts - INTERVAL 'n' unit delays every time window over the source by that
// much (query.Window.Delay): a window [s, e) closes when the largest event
// time seen minus the delay reaches e, and a tuple is late when that has
// passed the end of its first window; a ROWS window over a source with a
// delay is refused (a delay in time cannot apply to counts of tuples).
//
// # Queries
//
//	SELECT items FROM from [WHERE cond] [GROUP BY exprs] [HAVING cond]
//
// from is one of
//
//	src                                              -- no window: a stateless query
//	TUMBLE(src, time_col, INTERVAL 'n' unit)
//	HOP(src, time_col, slide, size)                  -- slide before size
//	src [RANGE size [SLIDE slide]]                   -- CQL, sizes as intervals
//	src [ROWS n [SLIDE m]]
//	... JOIN table ON src.key = table.key            -- a static table (UUID/BYTES key)
//	a [window] JOIN b [window] ON cond               -- a window join of two streams
//
// each optionally followed by [AS] alias; units are MILLISECOND, SECOND,
// MINUTE, HOUR (and their plurals). Expressions: columns (qualified or not),
// integer and decimal constants, + - * /, = <> != < <= > >=, AND, OR, NOT
// (pushed down to the comparisons), parentheses, and COUNT(*), COUNT(col),
// SUM, AVG, MIN, MAX.
//
// An aggregation (aggregates, GROUP BY or HAVING) needs a window; its select
// list holds window_start, window_end, GROUP BY columns or expressions, and
// aggregates (of any expression), in any order; HAVING uses aggregates (by
// alias or written again; one not selected is computed hidden) and GROUP BY
// columns. A query without aggregates is a projection of numeric
// expressions, or SELECT * (the input tuples), after WHERE.
//
// A view's output feeds the queries that name it in FROM: its columns are
// its select list (an aggregation's window start is also visible as
// window_start); a window over a view of an aggregation uses window_start as
// its event time.
//
// # Not supported yet (refused with an error saying so)
//
// Arithmetic over aggregates in the select list (chain a view); a
// projection of UUID or BYTES columns (SELECT * keeps them); a static join
// in a query without aggregates; GROUP BY a table column with other keys;
// more than one non-key column of a table in one query; table key and value
// columns other than UUID/BYTES; a window join with anything but SELECT *
// (make it a view), with aggregates, or with different windows on its two
// sides; GROUP BY keys wider than 16 bytes;
// window_end in a view's output; outer joins, DISTINCT, ORDER BY, LIMIT,
// UNION.
package sql
