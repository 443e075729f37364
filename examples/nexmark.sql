-- Nexmark's bids (docs/nexmark.md: nexmark.AppendJSON's JSON lines), and
-- queries of the Nexmark project's Flink suite (nexmark-flink's
-- resources/queries) as Flink users write them: the table's DDL, a
-- blackhole sink per query, INSERT INTO. Where a query of the suite needs
-- what saber-hx does not run (a join of two streams without windows, an
-- aggregation without a window), its windowed part is here.
CREATE TABLE bid (
  auction BIGINT NOT NULL,
  bidder BIGINT NOT NULL,
  price BIGINT NOT NULL,
  channel VARCHAR,
  url VARCHAR,
  dateTime TIMESTAMP(3),
  extra VARCHAR,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'bid.json', 'format' = 'json');

-- q0: pass through
CREATE TABLE nexmark_q0 (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3), extra VARCHAR)
  WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q0
SELECT auction, bidder, price, dateTime, extra FROM bid;

-- q1: the price in euros
CREATE TABLE nexmark_q1 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), dateTime TIMESTAMP(3), extra VARCHAR)
  WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q1
SELECT auction, bidder, 0.908 * price AS price, dateTime, extra FROM bid;

-- q2: a selection
CREATE TABLE nexmark_q2 (auction BIGINT, price BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q2
SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;

-- q5's windowed part: the bids per auction per sliding window
CREATE TABLE nexmark_q5 (auction BIGINT, num BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3))
  WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q5
SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end;

-- q7's windowed part: the highest price per 10 s, and the window's time
CREATE TABLE nexmark_q7 (maxprice BIGINT, dateTime TIMESTAMP(3)) WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q7
SELECT MAX(B1.price) AS maxprice, TUMBLE_ROWTIME(B1.dateTime, INTERVAL '10' SECOND) AS dateTime
FROM bid B1
GROUP BY TUMBLE(B1.dateTime, INTERVAL '10' SECOND);

-- q11: the bids of each bidder's sessions
CREATE TABLE nexmark_q11 (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3))
  WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q11
SELECT B.bidder, count(*) AS bid_count,
  SESSION_START(B.dateTime, INTERVAL '10' SECOND) AS starttime,
  SESSION_END(B.dateTime, INTERVAL '10' SECOND) AS endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND);

-- q14: CASE and a user's function (COUNT_CHAR)
CREATE TABLE nexmark_q14 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), bidTimeType VARCHAR,
  dateTime TIMESTAMP(3), extra VARCHAR, c_counts BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q14
SELECT auction, bidder, 0.908 * price AS price,
  CASE
    WHEN HOUR(dateTime) >= 8 AND HOUR(dateTime) <= 18 THEN 'dayTime'
    WHEN HOUR(dateTime) <= 6 OR HOUR(dateTime) >= 20 THEN 'nightTime'
    ELSE 'otherTime'
  END AS bidTimeType,
  dateTime, extra, count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;

-- q15, by window: the day's bids and bidders, by price range
CREATE TABLE nexmark_q15 (`day` VARCHAR, total_bids BIGINT, rank1_bids BIGINT, rank2_bids BIGINT, rank3_bids BIGINT,
  total_bidders BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q15
SELECT DATE_FORMAT(window_start, 'yyyy-MM-dd') AS `day`,
  count(*) AS total_bids,
  count(*) FILTER (WHERE price < 10000) AS rank1_bids,
  count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
  count(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
  count(DISTINCT bidder) AS total_bidders
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '1' DAY))
GROUP BY window_start, window_end;

-- q17, by window: each auction's day
CREATE TABLE nexmark_q17 (auction BIGINT, `day` VARCHAR, total_bids BIGINT, rank1_bids BIGINT, rank2_bids BIGINT,
  rank3_bids BIGINT, min_price BIGINT, max_price BIGINT, avg_price BIGINT, sum_price BIGINT)
  WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q17
SELECT auction, DATE_FORMAT(window_start, 'yyyy-MM-dd') AS `day`,
  count(*) AS total_bids,
  count(*) FILTER (WHERE price < 10000) AS rank1_bids,
  count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
  count(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
  min(price) AS min_price, max(price) AS max_price, avg(price) AS avg_price, sum(price) AS sum_price
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '1' DAY))
GROUP BY auction, window_start, window_end;

-- q21: the channel's id, from its name or the URL
CREATE TABLE nexmark_q21 (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, channel_id VARCHAR)
  WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q21
SELECT auction, bidder, price, channel,
  CASE
    WHEN lower(channel) = 'apple' THEN '0'
    WHEN lower(channel) = 'google' THEN '1'
    WHEN lower(channel) = 'facebook' THEN '2'
    WHEN lower(channel) = 'baidu' THEN '3'
    ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
  END AS channel_id
FROM bid
WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu');

-- q22: the URL's directories
CREATE TABLE nexmark_q22 (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, dir1 VARCHAR, dir2 VARCHAR, dir3 VARCHAR)
  WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q22
SELECT auction, bidder, price, channel,
  SPLIT_INDEX(url, '/', 3) AS dir1,
  SPLIT_INDEX(url, '/', 4) AS dir2,
  SPLIT_INDEX(url, '/', 5) AS dir3
FROM bid;
