-- SABER's SG2 (smart grid): the average load of every plug over the last
-- hour, every second.
CREATE SOURCE measurements (
  timestamp BIGINT, value REAL, property INT, plug INT, household INT, house INT
) WITH (connector = 'generator', workload = 'sg2');

SELECT window_start, plug, household, house, AVG(value) AS avg_value
FROM measurements [RANGE INTERVAL '3600' SECONDS SLIDE INTERVAL '1000' MILLISECONDS]
GROUP BY plug, household, house;
