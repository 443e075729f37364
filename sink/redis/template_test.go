package redissink

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/saber-hx/saber-hx/internal/redistest"
)

// TestParseTemplateBraces: "{{" and "}}" are literal braces, as the SQL
// key option documents and package sql accepts; a lone brace is refused
// where package sql refuses it.
func TestParseTemplateBraces(t *testing.T) {
	t.Parallel()
	cols := []string{"k", "v"}
	index := map[string]int{"k": 0, "v": 1}
	lit := func(s string) keyPart { return keyPart{lit: s, col: -1} }
	col := func(i int) keyPart { return keyPart{col: i} }
	for _, tc := range []struct {
		tmpl string
		want []keyPart
	}{
		{"{{lit}}:{k}", []keyPart{lit("{lit}:"), col(0)}},
		{"x}}:{k}", []keyPart{lit("x}:"), col(0)}},
		{"{{{k}}}", []keyPart{lit("{"), col(0), lit("}")}},
		{"a{{b{k}c}}d{v}", []keyPart{lit("a{b"), col(0), lit("c}d"), col(1)}},
		{"{k}{v}", []keyPart{col(0), col(1)}},
		{"{{}}", []keyPart{lit("{}")}},
	} {
		parts, err := parseTemplate(tc.tmpl, index, cols)
		if assert.NoError(t, err, tc.tmpl) {
			assert.Equal(t, tc.want, parts, tc.tmpl)
		}
	}
	for _, tc := range []struct{ tmpl, want string }{
		{"{k}}", `'}' without '{' at byte 3`},
		{"x}:{k}", `'}' without '{' at byte 1`},
		{"{{k}", `'}' without '{' at byte 3`},
		{"{k{v}", `'{' at byte 0 is not closed`},
		{"{k", `'{' at byte 0 is not closed`},
		{"{lit}:{k}", `unknown column "lit"`},
	} {
		_, err := parseTemplate(tc.tmpl, index, cols)
		assert.ErrorContains(t, err, tc.want, tc.tmpl)
	}
}

// TestHashLiteralBraces: a sink whose key template has literal braces
// opens and writes the keys they spell.
func TestHashLiteralBraces(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := NewHash(ctx, HashConfig{Addr: srv.Addr, KeyTemplate: "{{lit}}:{cat}:x}}", Columns: []string{"window_start", "cat", "cnt"}, Fields: []string{"cnt"}})
	require.NoError(t, err)
	defer h.Close()
	h.Add(cm1Row{5, "q", 9})
	require.NoError(t, h.Flush(ctx))
	cl, _ := newClient(t, srv.Addr)
	got, err := cl.HGetAll(ctx, "{lit}:q:x}").Result()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"cnt": "9"}, got)
}
