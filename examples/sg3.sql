-- SABER's SG3 (smart grid): the plugs whose average load over the last hour
-- is above the global average: SG2 and SG1 as views, joined per window.
-- Each view outputs one tuple per row, stamped with its window's start, so
-- a tumbling join window of one slide pairs the rows of the same window.
CREATE SOURCE measurements (
  timestamp BIGINT, value REAL, property INT, plug INT, household INT, house INT
) WITH (connector = 'generator', workload = 'sg3');

CREATE VIEW local_avg AS
SELECT window_start, plug, household, house, AVG(value) AS avg_value
FROM measurements [RANGE INTERVAL '1' HOUR SLIDE INTERVAL '1' SECOND]
GROUP BY plug, household, house;

CREATE VIEW global_avg AS
SELECT window_start, AVG(value) AS avg_value
FROM measurements [RANGE INTERVAL '1' HOUR SLIDE INTERVAL '1' SECOND];

SELECT *
FROM local_avg [RANGE INTERVAL '1' SECOND] AS l
JOIN global_avg [RANGE INTERVAL '1' SECOND] AS g
ON l.avg_value > g.avg_value;
