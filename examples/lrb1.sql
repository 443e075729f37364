-- SABER's LRB1 (Linear Road): the congested segments, those whose average
-- speed over the last five minutes is below 40 mph, every second.
CREATE SOURCE position_reports (
  timestamp BIGINT, vehicle INT, speed REAL, highway INT, lane INT,
  direction INT, position INT
) WITH (connector = 'generator', workload = 'lrb1');

SELECT window_start, highway, direction, position / 5280 AS segment, AVG(speed) AS avg_speed
FROM position_reports [RANGE INTERVAL '5' MINUTES SLIDE INTERVAL '1' SECOND]
GROUP BY highway, direction, position / 5280
HAVING avg_speed < 40;
