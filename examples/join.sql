-- SABER's JOIN_1 micro-benchmark: a theta-join of two synthetic streams over
-- tumbling windows of 128 rows; every pair is output whole (the left
-- tuple's bytes, then the right's).
CREATE SOURCE s1 (
  timestamp BIGINT, a1 INT, a2 INT, a3 INT, a4 INT, a5 INT, a6 INT
) WITH (connector = 'generator', workload = 'join');
CREATE SOURCE s2 (
  timestamp BIGINT, a1 INT, a2 INT, a3 INT, a4 INT, a5 INT, a6 INT
) WITH (connector = 'generator', workload = 'join', seed = 43);

SELECT *
FROM s1 [ROWS 128] JOIN s2 [ROWS 128] ON s1.a1 < s2.a1;
