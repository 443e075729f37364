package security

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecretNeverPrints: a Secret prints as *** with every verb, in
// JSON and slog, inside structs (exported field, and unexported where fmt
// cannot call its methods: then masked bytes), and as nothing when none
// is set; Reveal gives the value back.
func TestSecretNeverPrints(t *testing.T) {
	t.Parallel()
	const pw = "hunter2-correct-horse"
	s := NewSecret(pw)
	assert.Equal(t, pw, s.Reveal())
	assert.True(t, s.IsSet())
	assert.Equal(t, NewSecret(pw), s, "equal values compare equal")
	type holder struct {
		Password Secret
		hidden   Secret
		K        Kafka
	}
	h := holder{Password: s, hidden: s, K: Kafka{Protocol: SASLSSL, Mechanism: Plain, Username: "u", Password: s}}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10s"} {
		outs = append(outs, fmt.Sprintf(verb, s), fmt.Sprintf(verb, h), fmt.Sprintf(verb, &h))
	}
	j, err := json.Marshal(h)
	require.NoError(t, err)
	outs = append(outs, string(j))
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "password", s, "settings", h.K)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "password", s)
	outs = append(outs, buf.String(), h.K.String(), fmt.Sprint(h.K))
	for _, o := range outs {
		assert.NotContains(t, o, pw)
		assert.NotContains(t, o, "hunter2")
	}
	assert.Equal(t, "***", fmt.Sprint(s))
	assert.Equal(t, `"***"`, fmt.Sprintf("%q", s))
	assert.Contains(t, string(j), `"Password":"***"`)
	assert.Empty(t, fmt.Sprint(Secret{}), "no password: nothing")
	assert.False(t, Secret{}.IsSet())
}

// TestExpand: ${NAME} replaced from the lookup, $${ literal, a lone $
// itself; unset, unclosed and bad names are errors at the placeholder.
func TestExpand(t *testing.T) {
	t.Parallel()
	env := map[string]string{"A": "alpha", "B_2": "", "PW": "s3cret${A}"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, c := range []struct{ in, out string }{
		{"plain", "plain"},
		{"${A}", "alpha"},
		{"x${A}y${A}", "xalphayalpha"},
		{"${B_2}", ""},
		{"$${A}", "${A}"},
		{"$$${A}", "$${A}"}, // "$" then a literal "${"
		{"cost $5 ${A}$", "cost $5 alpha$"},
		{"${PW}", "s3cret${A}"}, // not expanded again
		{"{A}$", "{A}$"},
	} {
		got, err := Expand(c.in, lookup)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.out, got, c.in)
	}
	for _, c := range []struct {
		in   string
		off  int
		want string
	}{
		{"${NOPE}", 0, "environment variable NOPE is not set"},
		{"ab${A", 2, "not closed"},
		{"x${}", 1, "not an environment variable's name"},
		{"${9X}", 0, "not an environment variable's name"},
		{"${A-B}", 0, "not an environment variable's name"},
		{"${A}${NOPE}", 4, "NOPE"},
	} {
		_, err := Expand(c.in, lookup)
		var ee *ExpandError
		require.ErrorAs(t, err, &ee, c.in)
		assert.Equal(t, c.off, ee.Offset, c.in)
		assert.Contains(t, ee.Msg, c.want, c.in)
	}
}

// FuzzExpand: Expand never panics; an error's offset is a "${" in the
// text; without "${" the text is returned as it is; where every variable
// is set to "", the result is the text without its placeholders, and
// never longer.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "${A}", "$${A}", "a${B}c", "${", "$$", "${A}${", "x${9}", "${A}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := Expand(s, func(string) (string, bool) { return "", true })
		if err != nil {
			ee, ok := err.(*ExpandError)
			if !ok {
				t.Fatalf("%T: %v", err, err)
			}
			if !strings.HasPrefix(s[ee.Offset:], "${") {
				t.Fatalf("offset %d of %q is not at ${", ee.Offset, s)
			}
			return
		}
		if !strings.Contains(s, "${") && out != s {
			t.Fatalf("%q became %q", s, out)
		}
		if len(out) > len(s) {
			t.Fatalf("%q grew to %q with empty values", s, out)
		}
	})
}
