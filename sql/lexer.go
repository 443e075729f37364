package sql

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF    tokKind = iota
	tIdent          // a name or a keyword (Text as written; Quoted for "x" or `x`)
	tInt            // an integer literal
	tFloat          // a decimal literal
	tString         // a '...' literal (Text unquoted)
	tOp             // punctuation and operators
)

type token struct {
	kind   tokKind
	text   string
	quoted bool // a quoted identifier: never a keyword
	pos    pos
}

// is reports whether t is the keyword kw (case-insensitive, unquoted).
func (t token) is(kw string) bool {
	return t.kind == tIdent && !t.quoted && strings.EqualFold(t.text, kw)
}

func (t token) op(s string) bool { return t.kind == tOp && t.text == s }

// describe is how an error names the token: 'FROM', ')', the end of the input.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "the end of the input"
	case tString:
		return "'" + strings.ReplaceAll(t.text, "'", "''") + "'"
	case tIdent:
		if t.quoted {
			return "\"" + t.text + "\""
		}
		return "'" + t.text + "'"
	}
	return "'" + t.text + "'"
}

// lex splits src into tokens, the last one tEOF; on an error, the
// tokens before it (secretSpans reads them).
func lex(src string) ([]token, error) {
	var toks []token
	line, col := 1, 1
	i := 0
	adv := func(n int) {
		for j := i; j < i+n; {
			r, w := utf8.DecodeRuneInString(src[j:])
			if r == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
			j += w
		}
		i += n
	}
	for {
		// blanks and comments
		for i < len(src) {
			r, w := utf8.DecodeRuneInString(src[i:])
			switch {
			case unicode.IsSpace(r):
				adv(w)
				continue
			case strings.HasPrefix(src[i:], "--"):
				n := strings.IndexByte(src[i:], '\n')
				if n < 0 {
					n = len(src) - i
				}
				adv(n)
				continue
			case strings.HasPrefix(src[i:], "/*"):
				start := pos{i, line, col}
				n := strings.Index(src[i+2:], "*/")
				if n < 0 {
					return toks, errAt(start, "comment not closed: expected '*/'")
				}
				adv(n + 4)
				continue
			}
			break
		}
		p := pos{i, line, col}
		if i >= len(src) {
			toks = append(toks, token{kind: tEOF, pos: p})
			return toks, nil
		}
		r, w := utf8.DecodeRuneInString(src[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			return toks, errAt(p, "invalid UTF-8 in the text")
		case r == '_' || unicode.IsLetter(r):
			j := i
			for j < len(src) {
				r2, w2 := utf8.DecodeRuneInString(src[j:])
				if r2 != '_' && !unicode.IsLetter(r2) && !unicode.IsDigit(r2) {
					break
				}
				j += w2
			}
			toks = append(toks, token{kind: tIdent, text: src[i:j], pos: p})
			adv(j - i)
		case r >= '0' && r <= '9':
			j := i
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			kind := tInt
			if j+1 < len(src) && src[j] == '.' && src[j+1] >= '0' && src[j+1] <= '9' {
				kind = tFloat
				j++
				for j < len(src) && src[j] >= '0' && src[j] <= '9' {
					j++
				}
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && src[k] >= '0' && src[k] <= '9' {
					kind = tFloat
					for j = k; j < len(src) && src[j] >= '0' && src[j] <= '9'; j++ {
					}
				}
			}
			if j < len(src) {
				if r2, _ := utf8.DecodeRuneInString(src[j:]); r2 == '_' || unicode.IsLetter(r2) {
					return toks, errAt(pos{j, line, col + j - i}, "expected a blank or an operator after the number %s, found %q", src[i:j], r2)
				}
			}
			toks = append(toks, token{kind: kind, text: src[i:j], pos: p})
			adv(j - i)
		case r == '\'':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(src) {
					return toks, errAt(p, "string not closed: expected a closing quote (')")
				}
				if src[j] == '\'' {
					if j+1 < len(src) && src[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					j++
					break
				}
				b.WriteByte(src[j])
				j++
			}
			toks = append(toks, token{kind: tString, text: b.String(), pos: p})
			adv(j - i)
		case r == '"' || r == '`':
			q := byte(r)
			n := strings.IndexByte(src[i+1:], q)
			if n < 0 {
				return toks, errAt(p, "quoted name not closed: expected a closing %c", q)
			}
			if n == 0 {
				return toks, errAt(p, "empty quoted name")
			}
			name := src[i+1 : i+1+n]
			if strings.ContainsAny(name, "\n\r") {
				return toks, errAt(p, "a quoted name cannot span lines")
			}
			toks = append(toks, token{kind: tIdent, text: name, quoted: true, pos: p})
			adv(n + 2)
		default:
			op := ""
			for _, o := range []string{"<>", "!=", "<=", ">=", "||", "(", ")", ",", ";", ".", "*", "+", "-", "/", "%", "=", "<", ">", "[", "]"} {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" && strings.HasPrefix(src[i:], "::") {
				// RisingWave's (PostgreSQL's) cast, x::INT.
				return toks, errAt(p, "x::type is not supported: write CAST(x AS type)")
			}
			if op == "" {
				return toks, errAt(p, "unexpected character %q", r)
			}
			toks = append(toks, token{kind: tOp, text: op, pos: p})
			adv(len(op))
		}
	}
}
