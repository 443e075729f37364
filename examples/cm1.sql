-- SABER's CM1 (cluster monitoring, Google cluster trace task events): the
-- total CPU requested per task category over the last minute, every second.
CREATE SOURCE task_events (
  timestamp BIGINT, jobId BIGINT, taskId BIGINT, machineId BIGINT,
  userId INT, eventType INT, category INT, priority INT,
  cpu REAL, ram REAL, disk REAL, constraints INT
) WITH (connector = 'generator', workload = 'cm1');

SELECT window_start, category, SUM(cpu) AS sum_cpu
FROM task_events [RANGE INTERVAL '60' SECOND SLIDE INTERVAL '1' SECOND]
GROUP BY category;
