package main

// ysb --source kafka with --checkpoint-dir or --instances: the query of
// examples/ysb_kafka.sql, compiled from its text with the flags' brokers,
// topic, group, Redis and watermark delay, and run by run's machinery
// (its Kafka feed, its checkpoints and restore, its Redis sink in YSB's
// layout), so that run and ysb share one checkpoint path. The campaigns
// come from Redis, as ysb --source kafka reads them, handed to the
// program's table as CSV text.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/ysb"
)

// ysbScale is ysb --source kafka's --checkpoint-dir, --checkpoint-interval,
// --instance and --instances.
type ysbScale struct {
	ckptDir             string
	ckptEvery           time.Duration
	instance, instances int
}

// viaRun says whether the run goes through run's machinery: with
// checkpoints or a share of the partitions. Without them ysb.RunKafka
// runs it, as before either existed.
func (s ysbScale) viaRun() bool { return s.ckptDir != "" || s.instances > 1 }

// ysbCampaignsTable is the table of ysbKafkaSQL, loaded from Redis.
const ysbCampaignsTable = "campaigns"

// sqlQuote is s as a SQL string literal.
func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ysbKafkaSQL is examples/ysb_kafka.sql for a's servers, topic, group and
// watermark delay. Records that do not decode are skipped and counted, as
// ysb.RunKafka does (ysb check reads the same log).
func ysbKafkaSQL(a kafkaArgs) string {
	group := ""
	if a.group != "" {
		group = "group = " + sqlQuote(a.group) + ", "
	}
	return fmt.Sprintf(`CREATE SOURCE events (
  event_time BIGINT, user_id UUID, page_id UUID, ad_id UUID,
  ad_type ENUM('banner', 'modal', 'sponsored-search', 'mail', 'mobile'),
  event_type ENUM('view', 'click', 'purchase'),
  WATERMARK FOR event_time AS event_time - INTERVAL '%d' MILLISECOND
) WITH (connector = 'kafka', brokers = %s, topic = %s, %sformat = 'json', on_error = 'skip');

CREATE TABLE %s (ad_id UUID, campaign_id UUID)
  WITH (connector = 'file', path = 'redis', format = 'csv', header = 'true');

CREATE SINK ysb_redis AS
SELECT window_start, campaign_id, COUNT(*) AS seen_count
FROM TUMBLE(events, event_time, INTERVAL '%d' MILLISECOND)
JOIN campaigns ON events.ad_id = campaigns.ad_id
WHERE event_type = 'view'
GROUP BY window_start, campaign_id
WITH (connector = 'redis', addr = %s, layout = 'ysb');
`, a.delay, sqlQuote(a.brokers), sqlQuote(a.topic), group, ysbCampaignsTable, ysb.WindowMs, sqlQuote(a.redis))
}

// ysbCkptSummary is the summary of ysb --source kafka through run: ysb's,
// with run's checkpoints (--json: "checkpoints").
type ysbCkptSummary struct {
	ysbSummary
	Checkpoints *checkpointSummary `json:"checkpoints,omitempty"`
}

// ysbCampaignsCSV reads the campaigns from Redis as ysb.RunKafka does and
// returns them as the table's CSV text.
func ysbCampaignsCSV(ctx context.Context, addr string) (text []byte, campaigns, ads int, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cl := redis.NewClient(&redis.Options{Addr: addr})
	defer cl.Close()
	if err := cl.Ping(ctx).Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("redis %s: ping: %w", addr, err)
	}
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

// runYSBKafkaViaRun is ysb --source kafka with checkpoints or a share of
// the partitions: the checks of runYSBKafka are done.
func runYSBKafkaViaRun(sig *interrupt, a kafkaArgs, sc ysbScale, cfg engine.Config, ef *engineFlags, asJSON bool, stdout, stderr io.Writer) (err error) {
	if sc.ckptEvery <= 0 {
		return usagef("--checkpoint-interval %v: must be positive", sc.ckptEvery)
	}
	text := ysbKafkaSQL(a)
	prog, err := compileSQL("ysb", text)
	if err != nil {
		return usageError{fmt.Errorf("ysb --source kafka: %w", err)}
	}
	if err := cfg.Validate(prog.Sources[0].Schema.TupleSize); err != nil {
		return usageError{err}
	}
	csv, campaigns, ads, err := ysbCampaignsCSV(sig.ctx, a.redis)
	if err != nil {
		return err
	}
	r := &sqlRun{prog: prog, name: "ysb", output: "-", stderr: stderr, share: kafkaShare{instance: sc.instance, instances: sc.instances},
		tables: map[string][]byte{ysbCampaignsTable: csv}, stopAtEnd: a.stopAtEnd, quiet: true, sinkRetryTimeout: a.retryTimeout}
	defer r.abortSinks()
	defer r.closeSources()
	if err := r.open(stdout, sc.ckptDir, sc.ckptEvery, a.duration, a.durationSet); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "ysb kafka: %d campaigns, %d ads from redis %s; reading %s from %s", campaigns, ads, a.redis, a.topic, a.brokers)
	if sc.instances > 1 {
		fmt.Fprintf(stderr, " (instance %d of %d)", sc.instance, sc.instances)
	}
	fmt.Fprintln(stderr)
	if sc.instances > 1 {
		// Redis' seen_count is absolute: instances that count the same
		// window overwrite each other's part (docs/operations.md).
		fmt.Fprintf(stderr, "saber-hx: warning: --instances %d: the counts are exact only where each campaign's events are in one instance's partitions "+
			"(ysb produce spreads them over every partition: each instance's partial seen_count overwrites the others')\n", sc.instances)
	}
	src := r.sources[0]
	if ef.metrics != nil {
		ef.metrics.Registry().AddSource(a.topic, kafkaCounts(src.kafka))
		r.addSinkMetrics(ef.metrics.Registry())
	}
	start := time.Now()
	stats, err := r.run(sig.ctx, cfg, r.specs)
	seconds := time.Since(start).Seconds()
	if err != nil {
		if errors.Is(err, engine.ErrConfig) {
			return usageError{err}
		}
		return err
	}
	if err := r.finish(sig.interrupted()); err != nil {
		return err
	}
	s := ysbCkptSummary{ysbSummary: summarize("kafka", stats[0], seconds, ef)}
	s.markInterrupted(sig, sig.interrupted())
	if r.ckpt != nil {
		s.Checkpoints = r.ckpt.summary()
	}
	fmt.Fprintf(stderr, "ysb kafka: %d records from %s (%d malformed); %d window rows to redis %s\n",
		src.tuples+src.malformed(), a.topic, src.malformed(), stats[0].Rows, a.redis)
	if asJSON {
		if err := writeJSONLine(stdout, s); err != nil {
			return err
		}
	} else {
		if err := printSummary(s.ysbSummary, false, stdout); err != nil {
			return err
		}
		if s.Checkpoints != nil {
			s.Checkpoints.print(stdout)
		}
	}
	return sig.err()
}
