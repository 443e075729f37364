package sql

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlinkStartupMode: Flink's scan.startup.mode as Flink reads it:
// 'earliest-offset' and 'latest-offset' begin at the partitions' start
// or end whatever the group committed, 'group-offsets' at the group's
// committed offsets (it needs a group; without a committed offset where
// properties.auto.offset.reset says, else the source fails); saber-hx's
// own start keeps its meaning.
func TestFlinkStartupMode(t *testing.T) {
	t.Parallel()
	const ks = "CREATE SOURCE k (ts BIGINT) WITH (connector = 'kafka', topic = 't', brokers = 'a:1'"
	for _, tc := range []struct {
		opts      string
		start     string
		committed string
	}{
		{"", "earliest", "use"},
		{", group = 'g'", "earliest", "use"},
		{", group = 'g', start = 'latest'", "latest", "use"},
		{", 'properties.group.id' = 'g7', 'scan.startup.mode' = 'earliest-offset'", "earliest", "ignore"},
		{", 'properties.group.id' = 'g7', 'scan.startup.mode' = 'LATEST-OFFSET'", "latest", "ignore"},
		{", 'scan.startup.mode' = 'earliest-offset'", "earliest", "ignore"},
		{", 'properties.group.id' = 'g7', 'scan.startup.mode' = 'group-offsets'", "earliest", "require"},
		{", group = 'g7', 'scan.startup.mode' = 'group-offsets', 'properties.auto.offset.reset' = 'none'", "earliest", "require"},
		{", group = 'g7', 'scan.startup.mode' = 'group-offsets', 'properties.auto.offset.reset' = 'latest'", "latest", "use"},
		{", group = 'g7', 'scan.startup.mode' = 'group-offsets', 'properties.auto.offset.reset' = 'EARLIEST'", "earliest", "use"},
	} {
		t.Run(tc.opts, func(t *testing.T) {
			t.Parallel()
			s := mustCompile(t, ks+tc.opts+"); SELECT * FROM k").Source("k")
			require.NotNil(t, s)
			assert.Equal(t, tc.start, s.Start)
			assert.Equal(t, tc.committed, s.KafkaCommitted())
		})
	}
	for _, tc := range []struct {
		opts string
		at   string // the error is at the first occurrence of this text
		msg  string
	}{
		{", 'scan.startup.mode' = 'group-offsets')", "'group-offsets'", "scan.startup.mode = 'group-offsets' needs a consumer group (properties.group.id or group) whose committed offsets to begin at"},
		{", 'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '1')", "'timestamp'", "scan.startup.mode = 'timestamp' is not valid for a kafka source (valid: earliest-offset, latest-offset, group-offsets): beginning at a timestamp or at given offsets is not supported"},
		{", group = 'g', 'scan.startup.mode' = 'specific-offsets')", "'specific-offsets'", "scan.startup.mode = 'specific-offsets' is not valid for a kafka source (valid: earliest-offset, latest-offset, group-offsets): beginning at a timestamp or at given offsets is not supported"},
		{", 'scan.startup.mode' = 'earliest')", "'earliest'", "scan.startup.mode = 'earliest' is not valid for a kafka source (valid: earliest-offset, latest-offset, group-offsets)"},
		{", group = 'g', 'properties.auto.offset.reset' = 'latest')", "'properties.auto.offset.reset'", "option properties.auto.offset.reset applies to scan.startup.mode = 'group-offsets' (start says where"},
		{", group = 'g', 'scan.startup.mode' = 'earliest-offset', 'properties.auto.offset.reset' = 'latest')", "'properties.auto.offset.reset'", "option properties.auto.offset.reset applies to scan.startup.mode = 'group-offsets', not 'earliest-offset'"},
		{", group = 'g', 'scan.startup.mode' = 'group-offsets', 'properties.auto.offset.reset' = 'smallest')", "'smallest'", "properties.auto.offset.reset = 'smallest' is not valid for a kafka source (valid: earliest, latest, none)"},
		{", group = 'g', start = 'latest', 'scan.startup.mode' = 'group-offsets')", "'scan.startup.mode'", "options start and scan.startup.mode say the same: give one"},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			t.Parallel()
			text := ks + tc.opts
			e := compileErr(t, text)
			assert.Contains(t, e.Msg, tc.msg, e.Caret(text))
			assert.Equal(t, strings.Index(text, tc.at), e.Offset, e.Caret(text))
		})
	}
}
