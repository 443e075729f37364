package pipeline

// The original YSB pipeline's run (ysb --source kafka): the query of
// examples/ysb_kafka.sql, compiled from its text with the brokers, topic,
// group, Redis and watermark delay given, and run as any program is (its
// Kafka feed, checkpoints and restore, its Redis sink in YSB's layout), so
// that run and ysb share one feed loop and one checkpoint path. The
// campaigns come from Redis, handed to the program's table as CSV text.

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/internal/security"
	"github.com/saber-hx/saber-hx/sql"
	"github.com/saber-hx/saber-hx/ysb"
)

// ysbCampaignsTable is the table of ysbKafkaSQL, loaded from Redis.
const ysbCampaignsTable = "campaigns"

// sqlQuote is s as a SQL string literal of an option's value: a quote
// doubled, and ${ written $${ (a value's ${NAME} is read from the
// environment).
func sqlQuote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, "'", "''"), "${", "$${") + "'"
}

// ysbKafkaSQL is examples/ysb_kafka.sql for a's servers, topic, group or
// fetchers and watermark delay. Records that do not decode are skipped and counted
// (ysb check reads the same log). Its columns are NOT NULL, as the
// example's: 64-byte tuples without NULL bits, which the fused kernel
// takes. The WATERMARK's delay is DelayMs plus 1 ms: SQL closes a window
// when the watermark reaches its last millisecond, as Flink does, and
// --watermark-delay when the largest event time passes its end by
// DelayMs (the window's Delay, which ysb check's rule reads).
func ysbKafkaSQL(a YSBKafka) string {
	reading := "" // how the source reads the topic: its group or fetchers
	if a.Group != "" {
		reading = "group = " + sqlQuote(a.Group) + ", "
	} else if a.Fetchers > 1 {
		reading = fmt.Sprintf("fetchers = '%d', ", a.Fetchers)
	}
	return fmt.Sprintf(`CREATE SOURCE events (
  event_time BIGINT, user_id UUID NOT NULL, page_id UUID NOT NULL, ad_id UUID NOT NULL,
  ad_type ENUM('banner', 'modal', 'sponsored-search', 'mail', 'mobile') NOT NULL,
  event_type ENUM('view', 'click', 'purchase') NOT NULL,
  WATERMARK FOR event_time AS event_time - INTERVAL '%d' MILLISECOND
) WITH (connector = 'kafka', brokers = %s, topic = %s, %sformat = 'json', on_error = 'skip');

CREATE TABLE %s (ad_id UUID NOT NULL, campaign_id UUID NOT NULL)
  WITH (connector = 'file', path = 'redis', format = 'csv', header = 'true');

CREATE SINK ysb_redis AS
SELECT window_start, campaign_id, COUNT(*) AS seen_count
FROM TUMBLE(events, event_time, INTERVAL '%d' MILLISECOND)
JOIN campaigns ON events.ad_id = campaigns.ad_id
WHERE event_type = 'view'
GROUP BY window_start, campaign_id
WITH (connector = 'redis', addr = %s, layout = 'ysb');
`, a.DelayMs+1, sqlQuote(strings.Join(a.Brokers, ",")), sqlQuote(a.Topic), reading, ysbCampaignsTable, ysb.WindowMs, sqlQuote(a.Redis))
}

// ysbCampaignsCSV reads the campaigns that ysb setup wrote to Redis and
// returns them as the table's CSV text.
func ysbCampaignsCSV(ctx context.Context, server security.Redis) (text []byte, campaigns, ads int, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	addr := server.Addr
	cl, err := server.Connect(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	defer cl.Close()
	camps, ids, err := ysb.LoadCampaignsRedis(ctx, cl)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(camps.AdIDs) == 0 {
		return nil, 0, 0, fmt.Errorf("redis %s: no ads of the campaigns set (run saber-hx ysb setup first)", addr)
	}
	var b bytes.Buffer
	if err := camps.WriteCSV(&b); err != nil {
		return nil, 0, 0, err
	}
	return b.Bytes(), len(ids), len(camps.AdIDs), nil
}

// YSBKafka is the original YSB pipeline's run: JSON events from a Kafka
// topic, the campaigns from Redis, each window's counts to Redis in the
// original layout (examples/ysb_kafka.sql).
type YSBKafka struct {
	Brokers []string
	Topic   string
	Group   string // the consumer group whose offsets are committed; "": none
	// Fetchers is the source's fetchers option without a group (0 or 1:
	// one consumer client).
	Fetchers int
	Redis    string // host:port
	DelayMs  int64  // the watermark delay
	// KafkaSecurity and RedisSecurity secure the connections (the zero
	// values: plaintext, no password). RedisSecurity's Addr is Redis.
	KafkaSecurity security.Kafka
	RedisSecurity security.Redis
}

// YSBKafkaProgram compiles the pipeline's query for a's servers and loads
// its campaigns table from Redis; campaigns and ads are what it read.
func YSBKafkaProgram(ctx context.Context, a YSBKafka) (p *Program, campaigns, ads int, err error) {
	if a.DelayMs < 0 {
		return nil, 0, 0, usagef("watermark delay %d ms: must not be negative", a.DelayMs)
	}
	if a.Fetchers < 0 || a.Fetchers > sql.MaxFetchers || a.Fetchers > 1 && a.Group != "" {
		return nil, 0, 0, usagef("--fetchers %d: want 1 to %d, and 1 with --group (a group member reads through one client)", a.Fetchers, sql.MaxFetchers)
	}
	p, err = Compile("ysb", ysbKafkaSQL(a))
	if err != nil {
		return nil, 0, 0, usageError{fmt.Errorf("ysb --source kafka: %w", err)}
	}
	// The settings go to the compiled program, not into its text: no
	// password in a SQL text anything could print.
	server := a.RedisSecurity
	server.Addr = a.Redis
	p.prog.Sources[0].KafkaSecurity = a.KafkaSecurity
	for _, q := range p.prog.Queries {
		if q.Sink != nil && q.Sink.Connector == "redis" {
			q.Sink.Redis = server
		}
	}
	csv, campaigns, ads, err := ysbCampaignsCSV(ctx, server)
	if err != nil {
		return nil, 0, 0, err
	}
	if err := p.SetTable(ysbCampaignsTable, csv); err != nil {
		return nil, 0, 0, err
	}
	return p, campaigns, ads, nil
}
