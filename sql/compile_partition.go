package sql

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Partitioned filesystem sinks, as Flink's filesystem connector writes
// them: CREATE TABLE t (...) PARTITIONED BY (a, b) WITH ('connector' =
// 'filesystem', 'path' = 'dir', ...) puts each row under
// dir/a=<value>/b=<value>/, the files holding the other columns; the
// partition-commit options say when a partition is complete and what is
// done then (sink/partitioned.go, pipeline/partitioned.go).

// The options of a partitioned filesystem sink.
const (
	optDefaultName  = "partition.default-name"
	optTrigger      = "sink.partition-commit.trigger"
	optCommitDelay  = "sink.partition-commit.delay"
	optPolicy       = "sink.partition-commit.policy.kind"
	optSuccessName  = "sink.partition-commit.success-file.name"
	optTimePattern  = "partition.time-extractor.timestamp-pattern"
	optExtractor    = "partition.time-extractor.kind"
	optTimeFormat   = "partition.time-extractor.timestamp-formatter"
	optWatermarkTZ  = "sink.partition-commit.watermark-time-zone"
	optRollInterval = "sink.rolling-policy.rollover-interval"
	optRollCheck    = "sink.rolling-policy.check-interval"
)

// rollingOptions are Flink's rolling-policy options that a filesystem
// sink accepts: its files roll at every checkpoint (sql/doc.go).
var rollingOptions = []string{optRollInterval, optRollCheck}

// partitionOptions are the options a partitioned filesystem sink takes.
var partitionOptions = []string{optDefaultName, optTrigger, optCommitDelay, optPolicy, optSuccessName, optTimePattern, optExtractor, optTimeFormat, optWatermarkTZ}

// rollingPolicy checks the rolling-policy options of a filesystem sink:
// durations, accepted (its files roll at checkpoints).
func rollingPolicy(s *optionSet) error {
	for _, k := range rollingOptions {
		if o, ok := s.get(k); ok {
			if _, err := flinkDuration(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// partitioning reads a filesystem sink table's PARTITIONED BY and its
// partition options; cols are the table's columns (or its query's, by
// the same names).
func partitioning(st *stmt, s *optionSet, cols []OutputColumn) (*Partitioning, error) {
	pt := &Partitioning{DefaultName: "__DEFAULT_PARTITION__"}
	for i, id := range st.partitionBy {
		k := slices.IndexFunc(cols, func(c OutputColumn) bool { return strings.EqualFold(c.Name, id.name) })
		if k < 0 {
			return nil, errAt(id.pos, "PARTITIONED BY %s: table %s has no column %s", id.name, st.name.name, id.name)
		}
		if slices.ContainsFunc(st.partitionBy[:i], func(o ident) bool { return strings.EqualFold(o.name, id.name) }) {
			return nil, errAt(id.pos, "PARTITIONED BY names %s twice", id.name)
		}
		pt.Columns = append(pt.Columns, k)
		pt.Names = append(pt.Names, cols[k].Name)
	}
	if len(pt.Columns) == len(cols) {
		return nil, errAt(st.partPos, "table %s: every column is a partition column, so its files would hold nothing: leave one out of PARTITIONED BY", st.name.name)
	}
	if o, ok := s.get(optDefaultName); ok {
		if o.val == "" || strings.ContainsAny(o.val, "/\x00") || o.val == "." || o.val == ".." {
			return nil, errAt(o.valPos, "%s = '%s': want a directory name (not empty, no '/')", o.name(), o.val)
		}
		pt.DefaultName = o.val
	}
	if o, ok := s.get(optExtractor); ok && strings.ToLower(o.val) != "default" {
		return nil, errAt(o.valPos, "%s = '%s': only 'default' is supported (the time of a partition from %s; a custom extractor is a Java class)", o.name(), o.val, optTimePattern)
	}
	if o, ok := s.get(optTimeFormat); ok && o.val != "yyyy-MM-dd HH:mm:ss" {
		return nil, errAt(o.valPos, "%s = '%s': only 'yyyy-MM-dd HH:mm:ss', the default, is supported (a pattern's text may also be 'yyyy-MM-dd')", o.name(), o.val)
	}
	if o, ok := s.get(optWatermarkTZ); ok && !strings.EqualFold(o.val, "UTC") {
		return nil, errAt(o.valPos, "%s = '%s': only 'UTC', the default, is supported (saber-hx's timestamps are UTC)", o.name(), o.val)
	}
	if o, ok := s.get(optTimePattern); ok {
		if !strings.Contains(o.val, "$") {
			return nil, errAt(o.valPos, "%s = '%s': the pattern names no partition column ($%s)", o.name(), o.val, pt.Names[0])
		}
		pt.Pattern = o.val
	}
	if o, ok := s.get(optCommitDelay); ok {
		d, err := flinkDuration(o)
		if err != nil {
			return nil, err
		}
		pt.Delay = d
	}
	policy, hasPolicy := s.get(optPolicy)
	if hasPolicy {
		for _, k := range strings.Split(policy.val, ",") {
			switch k = strings.ToLower(strings.TrimSpace(k)); k {
			case "success-file":
				pt.SuccessFile = "_SUCCESS"
			case "metastore":
				return nil, errAt(policy.valPos, "%s = '%s': the metastore policy is Hive's (a filesystem table has no metastore; Flink refuses it too): use 'success-file'", policy.name(), policy.val)
			case "custom":
				return nil, errAt(policy.valPos, "%s = '%s': a custom policy is a Java class: use 'success-file'", policy.name(), policy.val)
			default:
				return nil, errAt(policy.valPos, "%s = '%s': unknown partition-commit policy %q (valid: success-file)", policy.name(), policy.val, k)
			}
		}
	}
	if o, ok := s.get(optSuccessName); ok {
		if o.val == "" || strings.ContainsAny(o.val, "/\x00") || o.val == "." || o.val == ".." || strings.HasPrefix(o.val, ".") {
			return nil, errAt(o.valPos, "%s = '%s': want a file name (not empty, no '/', not hidden)", o.name(), o.val)
		}
		if pt.SuccessFile == "" {
			return nil, errAt(o.keyPos, "%s applies to %s = 'success-file'", o.name(), optPolicy)
		}
		pt.SuccessFile = o.val
	}
	trigger, hasTrigger := s.get(optTrigger)
	switch {
	case hasTrigger && strings.EqualFold(trigger.val, "partition-time"):
		pt.Trigger = "partition-time"
	case hasTrigger && strings.EqualFold(trigger.val, "process-time"):
		return nil, errAt(trigger.valPos, "%s = '%s': committing partitions by the wall clock is not supported: use 'partition-time' (the watermark passes a partition's time, %s, plus %s)", trigger.name(), trigger.val, optTimePattern, optCommitDelay)
	case hasTrigger:
		return nil, errAt(trigger.valPos, "%s = '%s' is not valid (valid: partition-time)", trigger.name(), trigger.val)
	case hasPolicy:
		return nil, errAt(policy.keyPos, "%s needs %s = 'partition-time' (Flink's default, 'process-time', commits by the wall clock, which saber-hx does not)", policy.name(), optTrigger)
	}
	if pt.Trigger != "" && !hasPolicy {
		return nil, errAt(trigger.keyPos, "%s = 'partition-time' without %s commits nothing: add %s = 'success-file'", trigger.name(), optPolicy, optPolicy)
	}
	if pt.Trigger == "" {
		for _, k := range []string{optCommitDelay, optTimePattern} {
			if o, ok := s.get(k); ok {
				return nil, errAt(o.keyPos, "%s applies to %s = 'partition-time'", o.name(), optTrigger)
			}
		}
	}
	if pt.Pattern != "" {
		// every $name of the pattern is a partition column's (the longest
		// name first: $hm before $h)
		for i := 0; i < len(pt.Pattern); i++ {
			if pt.Pattern[i] != '$' {
				continue
			}
			best := ""
			for _, n := range pt.Names {
				if strings.HasPrefix(pt.Pattern[i+1:], n) && len(n) > len(best) {
					best = n
				}
			}
			if best == "" {
				o, _ := s.get(optTimePattern)
				return nil, errAt(inValue(o, i), "%s = '%s': $ names no partition column (%s)", o.name(), o.val, strings.Join(pt.Names, ", "))
			}
		}
	}
	return pt, nil
}

// flinkDuration reads a duration as Flink writes one: a number and a
// unit, a space between or none ('1 min', '1min', '30 s', '500ms'); no
// unit: milliseconds.
func flinkDuration(o option) (time.Duration, error) {
	v := strings.TrimSpace(o.val)
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	unit := strings.ToLower(strings.TrimLeftFunc(v[i:], unicode.IsSpace))
	units := map[string]time.Duration{
		"": time.Millisecond, "ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
		"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
		"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
		"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
		"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	}
	u, ok := units[unit]
	if err != nil || !ok || n > int64(1<<62)/int64(u) {
		return 0, errAt(o.valPos, "%s = '%s': want a duration such as '1 min', '30 s' or '500 ms' (units: ms, s, min, h, d)", o.name(), o.val)
	}
	return time.Duration(n) * u, nil
}
