-- SABER's PROJ micro-benchmark (PROJ_4): a stateless projection of four
-- arithmetic expressions; each output tuple is the event time followed by
-- p1..p4.
CREATE SOURCE synthetic (
  timestamp BIGINT, a1 INT, a2 INT, a3 INT, a4 INT, a5 INT, a6 INT
) WITH (connector = 'generator', workload = 'proj');

SELECT a1 * 3 + 2 AS p1, a2 * 3 + 2 AS p2, a3 * 3 + 2 AS p3, a4 * 3 + 2 AS p4
FROM synthetic;
