package reference

import "errors"

// likeToken is one element of a LIKE pattern: a literal character, _ (one
// character) or % (any sequence of them).
type likeToken struct {
	any, one bool
	lit      string // the literal character, as its bytes
}

// likeMatch reports whether s matches pattern, over characters (runes; an
// invalid byte is one character), case-sensitively: % matches any
// sequence, _ one character, and the escape character (0: none) makes the
// character after it literal. A pattern ending in its escape character is
// an error.
func likeMatch(s, pattern string, escape rune) (bool, error) {
	var toks []likeToken
	pcs := characters(pattern)
	for i := 0; i < len(pcs); i++ {
		c := pcs[i]
		switch {
		case escape != 0 && c == string(escape):
			i++
			if i == len(pcs) {
				return false, errors.New("the pattern ends with its escape character")
			}
			toks = append(toks, likeToken{lit: pcs[i]})
		case c == "%":
			toks = append(toks, likeToken{any: true})
		case c == "_":
			toks = append(toks, likeToken{one: true})
		default:
			toks = append(toks, likeToken{lit: c})
		}
	}
	cs := characters(s)
	// m[i][j]: toks[i:] matches cs[j:], filled from the ends backwards.
	m := make([][]bool, len(toks)+1)
	for i := range m {
		m[i] = make([]bool, len(cs)+1)
	}
	m[len(toks)][len(cs)] = true
	for i := len(toks) - 1; i >= 0; i-- {
		for j := len(cs); j >= 0; j-- {
			t := toks[i]
			switch {
			case t.any: // nothing, or one character more
				m[i][j] = m[i+1][j] || (j < len(cs) && m[i][j+1])
			case j == len(cs):
				m[i][j] = false
			case t.one:
				m[i][j] = m[i+1][j+1]
			default:
				m[i][j] = t.lit == cs[j] && m[i+1][j+1]
			}
		}
	}
	return m[0][0], nil
}
