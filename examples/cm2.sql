-- SABER's CM2 (cluster monitoring): the average CPU requested by the tasks
-- of each job that were scheduled (eventType 1) in the last minute, every
-- second. HOP takes the slide before the size.
CREATE SOURCE task_events (
  timestamp BIGINT, jobId BIGINT, taskId BIGINT, machineId BIGINT,
  userId INT, eventType INT, category INT, priority INT,
  cpu REAL, ram REAL, disk REAL, constraints INT
) WITH (connector = 'generator', workload = 'cm2');

SELECT window_start, window_end, jobId, AVG(cpu) AS avg_cpu
FROM HOP(task_events, timestamp, INTERVAL '1' SECOND, INTERVAL '60' SECOND)
WHERE eventType = 1
GROUP BY window_start, window_end, jobId;
