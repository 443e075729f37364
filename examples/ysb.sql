-- The Yahoo Streaming Benchmark (README "Semantics"): per campaign per 10 s
-- tumbling window, the number of views and the latest view's event time.
CREATE SOURCE events (
  event_time BIGINT, user_id UUID, page_id UUID, ad_id UUID,
  ad_type INT, event_type INT, ip INT
) WITH (connector = 'file', path = 'events.bin', format = 'binary', tuple_size = 128);

CREATE TABLE campaigns (ad_id UUID, campaign_id UUID)
  WITH (connector = 'file', path = 'campaigns.csv', format = 'csv', header = 'true');

SELECT window_start, campaign_id, COUNT(*) AS count, MAX(event_time) AS max_event_time
FROM TUMBLE(events, event_time, INTERVAL '10' SECOND)
JOIN campaigns ON events.ad_id = campaigns.ad_id
WHERE event_type = 0
GROUP BY window_start, campaign_id;
