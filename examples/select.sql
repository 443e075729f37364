-- SABER's SELECT micro-benchmark (SELECT_16, selectivity 0.5): a stateless
-- selection of 16 predicates; the first keeps half the tuples, the others
-- hold on every generated tuple (a2..a6 are in [0, 1000)).
CREATE SOURCE synthetic (
  timestamp BIGINT, a1 INT, a2 INT, a3 INT, a4 INT, a5 INT, a6 INT
) WITH (connector = 'generator', workload = 'select');

SELECT * FROM synthetic
WHERE a1 < 500
  AND a2 >= 0
  AND a3 < 1000
  AND a4 <> -1
  AND a5 <= 999
  AND a6 > -1
  AND a2 / 1000 = 0
  AND a3 >= 0
  AND a4 < 1000
  AND a5 <> -1
  AND a6 <= 999
  AND a2 > -1
  AND a3 / 1000 = 0
  AND a4 >= 0
  AND a5 < 1000
  AND a6 <> -1;
