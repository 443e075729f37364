-- SABER's GROUP-BY micro-benchmark: COUNT(*) and SUM(a2) per a1 over
-- tumbling one-second windows.
CREATE SOURCE synthetic (
  timestamp BIGINT, a1 INT, a2 INT, a3 INT, a4 INT, a5 INT, a6 INT
) WITH (connector = 'generator', workload = 'groupby');

SELECT window_start, a1, COUNT(*) AS cnt, SUM(a2) AS sum_a2
FROM TUMBLE(synthetic, timestamp, INTERVAL '1' SECOND)
GROUP BY window_start, a1;
