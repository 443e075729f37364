package reference

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// upperCase and lowerCase are UPPER(s) and LOWER(s): Unicode's full case
// mapping, which Java's String.toUpperCase and toLowerCase (Flink's UPPER
// and LOWER) apply outside the Turkic and Lithuanian locales, computed by
// package golang.org/x/text/cases for no particular language
// (language.Und), not by the engine's code: ß upper-cases to SS and ﬁ to
// FI, İ lower-cases to i and U+0307. Every invalid byte of s is U+FFFD
// first, as in the engine.
func upperCase(s string) string { return cases.Upper(language.Und).String(validUTF8(s)) }

// lowerCase lower-cases s with x/text but for Σ, which is ς where it is
// final and σ elsewhere (finalSigma): x/text (as ICU) skips a character
// that is both case-ignorable and cased (ʰ, U+0345) as ignorable, where
// the Unicode Standard's rule and Java count it as cased.
func lowerCase(s string) string {
	s = validUTF8(s)
	lower := cases.Lower(language.Und)
	pieces := strings.Split(s, "Σ")
	var b strings.Builder
	at := 0 // the byte where pieces[i] starts in s
	for i, p := range pieces {
		if i > 0 {
			if finalSigma(s[:at-len("Σ")], s[at:]) {
				b.WriteString("ς")
			} else {
				b.WriteString("σ")
			}
		}
		b.WriteString(lower.String(p))
		at += len(p) + len("Σ")
	}
	return b.String()
}

// finalSigma reports whether a Σ between before and after is final by
// the Unicode Standard's Final_Sigma condition (3.13, table 3-17): before
// it, a cased character and then any case-ignorable characters; after it,
// not any case-ignorable characters and then a cased character.
func finalSigma(before, after string) bool {
	b, a := []rune(before), []rune(after)
	i := len(b) - 1
	for i >= 0 && !cased(b[i]) && caseIgnorable(b[i]) {
		i--
	}
	if i < 0 || !cased(b[i]) {
		return false
	}
	j := 0
	for j < len(a) && !cased(a[j]) && caseIgnorable(a[j]) {
		j++
	}
	return j == len(a) || !cased(a[j])
}

// cased is Unicode's derived property Cased (DerivedCoreProperties.txt):
// Lowercase or Uppercase or Lt.
func cased(r rune) bool {
	return unicode.IsLower(r) || unicode.IsUpper(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// caseIgnorable is Unicode's derived property Case_Ignorable: Mn, Me, Cf,
// Lm, Sk, or Word_Break MidLetter, MidNumLet or Single_Quote
// (WordBreakProperty.txt, Unicode 15).
func caseIgnorable(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk) ||
		strings.ContainsRune(":\u00B7\u0387\u055F\u05F4\u2027\uFE13\uFE55\uFF1A"+ // MidLetter
			".\u2018\u2019\u2024\uFE52\uFF07\uFF0E"+ // MidNumLet
			"'", r) // Single_Quote
}

// validUTF8 is s with every byte that is not part of a valid UTF-8
// encoding replaced by U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s { // an invalid byte ranges as one utf8.RuneError
		b.WriteRune(r)
	}
	return b.String()
}
