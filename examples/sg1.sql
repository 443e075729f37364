-- SABER's SG1 (smart grid, DEBS 2014): the global average load over the
-- last hour, every second.
CREATE SOURCE measurements (
  timestamp BIGINT, value REAL, property INT, plug INT, household INT, house INT
) WITH (connector = 'generator', workload = 'sg1');

SELECT window_start, AVG(value) AS avg_value
FROM measurements [RANGE INTERVAL '1' HOUR SLIDE INTERVAL '1' SECOND];
