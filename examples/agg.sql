-- SABER's AGG micro-benchmark (AGG_avg): the average of a2 over the last
-- second, every 100 ms.
CREATE SOURCE synthetic (
  timestamp BIGINT, a1 INT, a2 INT, a3 INT, a4 INT, a5 INT, a6 INT
) WITH (connector = 'generator', workload = 'agg');

SELECT window_start, AVG(a2) AS avg_a2
FROM synthetic [RANGE INTERVAL '1' SECOND SLIDE INTERVAL '100' MILLISECOND];
