-- The Yahoo Streaming Benchmark as its authors run it (README "The
-- original YSB pipeline"): JSON events from Kafka (saber-hx ysb produce),
-- the ads' campaigns (saber-hx ysb setup --campaigns-out campaigns.csv),
-- and per campaign per 10 s window the views counted, written to Redis in
-- the original layout, which saber-hx ysb check reads. The events always
-- carry every field: NOT NULL keeps the tuple at 64 bytes, without NULL
-- bits, and the query on the fused kernel.
CREATE SOURCE events (
  event_time BIGINT, user_id UUID NOT NULL, page_id UUID NOT NULL, ad_id UUID NOT NULL,
  ad_type ENUM('banner', 'modal', 'sponsored-search', 'mail', 'mobile') NOT NULL,
  event_type ENUM('view', 'click', 'purchase') NOT NULL,
  WATERMARK FOR event_time AS event_time - INTERVAL '0' MILLISECOND
) WITH (connector = 'kafka', brokers = '127.0.0.1:9092', topic = 'ad-events', group = 'ysb-sql', format = 'json');

CREATE TABLE campaigns (ad_id UUID NOT NULL, campaign_id UUID NOT NULL)
  WITH (connector = 'file', path = 'campaigns.csv', format = 'csv', header = 'true');

CREATE SINK ysb_redis AS
SELECT window_start, campaign_id, COUNT(*) AS seen_count
FROM TUMBLE(events, event_time, INTERVAL '10' SECOND)
JOIN campaigns ON events.ad_id = campaigns.ad_id
WHERE event_type = 'view'
GROUP BY window_start, campaign_id
WITH (connector = 'redis', addr = '127.0.0.1:6379', layout = 'ysb');
