package redissink

import (
	"strings"
	"testing"
)

// FuzzParseTemplate: any template is parsed or refused, never a panic;
// a parsed one spells the template again from its parts (a literal's
// braces written twice).
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"cm1:{window_start}:{cat}", "{a}{b}", "x", "{", "}", "{}", "{nope}", "a{a}b{b}c", "{{lit}}:{a}", "x}}:{a}", "{{{a}}}", "{a}}"} {
		f.Add(s)
	}
	cols := []string{"a", "b", "window_start", "cat", ""}
	index := map[string]int{"a": 0, "b": 1, "window_start": 2, "cat": 3, "": 4}
	f.Fuzz(func(t *testing.T, tmpl string) {
		parts, err := parseTemplate(tmpl, index, cols)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, p := range parts {
			if p.col < 0 {
				b.WriteString(strings.NewReplacer("{", "{{", "}", "}}").Replace(p.lit))
			} else {
				b.WriteString("{" + cols[p.col] + "}")
			}
		}
		if b.String() != tmpl {
			t.Fatalf("%q parsed as %q", tmpl, b.String())
		}
	})
}
