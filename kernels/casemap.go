package kernels

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// mapCase writes s lower- or upper-cased into dst's capacity (grown where
// a character's other case is longer) and returns it, as Java's
// String.toLowerCase and toUpperCase (Flink's LOWER and UPPER) map a
// string outside the Turkic and Lithuanian locales: Unicode's full case
// mapping. ASCII maps byte for byte. Another character maps to its simple
// other case (unicode.ToLower, ToUpper), but for
//
//   - UPPER: the characters whose upper case is several (SpecialCasing.txt's
//     unconditional mappings: ß SS, ﬁ FI, ŉ ʼN, ΐ Ϊ́, ᾳ ΑΙ, ...);
//   - LOWER: İ (U+0130), which is i and U+0307 COMBINING DOT ABOVE, and Σ,
//     which is ς where it ends a word (Unicode's Final_Sigma, finalSigma),
//     else σ.
//
// An invalid byte becomes U+FFFD.
func mapCase(dst, s []byte, upper bool) []byte {
	all := s
	for len(s) > 0 {
		c := s[0]
		if c < utf8.RuneSelf {
			if upper && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			} else if !upper && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			s = s[1:]
			continue
		}
		r, w := utf8.DecodeRune(s)
		switch {
		case upper:
			if m, ok := upperSpecial(r); ok {
				dst = append(dst, m...)
			} else {
				dst = utf8.AppendRune(dst, unicode.ToUpper(r))
			}
		case r == 'Σ':
			at := len(all) - len(s)
			if finalSigma(all[:at], s[w:]) {
				dst = append(dst, "ς"...)
			} else {
				dst = append(dst, "σ"...)
			}
		case r == 'İ':
			dst = append(dst, "i\u0307"...)
		default:
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
		}
		s = s[w:]
	}
	return dst
}

// finalSigma reports whether a Σ between before and after is final, by
// Unicode's Final_Sigma condition (The Unicode Standard, 3.13, table
// 3-17): a cased character before it, with only case-ignorable characters
// between, and none after it past case-ignorable characters. (Java decides
// by the word boundaries around the Σ instead, which agrees on words of
// letters and differs on contrived strings: Java lowers Α_Σ to α_ς, Α1Σ to
// α1ς, and here they are α_σ and α1σ.)
func finalSigma(before, after []byte) bool {
	for len(before) > 0 {
		r, w := utf8.DecodeLastRune(before)
		if isCased(r) {
			for len(after) > 0 {
				r, w := utf8.DecodeRune(after)
				if isCased(r) {
					return false
				}
				if !isCaseIgnorable(r) {
					return true
				}
				after = after[w:]
			}
			return true
		}
		if !isCaseIgnorable(r) {
			return false
		}
		before = before[:len(before)-w]
	}
	return false
}

// isCased is Unicode's Cased property: a character with an upper, lower
// or title case form (Lu, Ll, Lt, Other_Lowercase, Other_Uppercase).
func isCased(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// isCaseIgnorable is Unicode's Case_Ignorable property: marks (Mn, Me),
// format characters (Cf), modifier letters and symbols (Lm, Sk), and the
// characters that may sit inside a word (Word_Break MidLetter, MidNumLet,
// Single_Quote: ' . : · and their kin).
func isCaseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0x00B7, 0x0387, 0x055F, 0x05F4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// upperSpecial is r's upper case where it is several characters.
func upperSpecial(r rune) (string, bool) {
	if r < 0x1E96 {
		// The six below ẖ, looked for without a search: most of the
		// characters that have another case (Latin, Greek, Cyrillic) are
		// here, and have no special one.
		switch r {
		case 0x00DF, 0x0149, 0x01F0, 0x0390, 0x03B0, 0x0587:
		default:
			return "", false
		}
	} else if r > upperSpecials[len(upperSpecials)-1].r {
		return "", false
	}
	i := sort.Search(len(upperSpecials), func(i int) bool { return upperSpecials[i].r >= r })
	if i < len(upperSpecials) && upperSpecials[i].r == r {
		return upperSpecials[i].s, true
	}
	return "", false
}

// upperSpecials are the characters whose upper case is several, in
// order: SpecialCasing.txt's unconditional mappings (Unicode 15.0, as
// package unicode; Java's toUpperCase applies the same).
var upperSpecials = [...]struct {
	r rune
	s string
}{
	{0x00DF, "SS"},                 // ß -> SS
	{0x0149, "\u02bcN"},            // ŉ -> ʼN
	{0x01F0, "J\u030c"},            // ǰ -> J̌
	{0x0390, "\u0399\u0308\u0301"}, // ΐ -> Ϊ́
	{0x03B0, "\u03a5\u0308\u0301"}, // ΰ -> Ϋ́
	{0x0587, "\u0535\u0552"},       // և -> ԵՒ
	{0x1E96, "H\u0331"},            // ẖ -> H̱
	{0x1E97, "T\u0308"},            // ẗ -> T̈
	{0x1E98, "W\u030a"},            // ẘ -> W̊
	{0x1E99, "Y\u030a"},            // ẙ -> Y̊
	{0x1E9A, "A\u02be"},            // ẚ -> Aʾ
	{0x1F50, "\u03a5\u0313"},       // ὐ -> Υ̓
	{0x1F52, "\u03a5\u0313\u0300"}, // ὒ -> Υ̓̀
	{0x1F54, "\u03a5\u0313\u0301"}, // ὔ -> Υ̓́
	{0x1F56, "\u03a5\u0313\u0342"}, // ὖ -> Υ̓͂
	{0x1F80, "\u1f08\u0399"},       // ᾀ -> ἈΙ
	{0x1F81, "\u1f09\u0399"},       // ᾁ -> ἉΙ
	{0x1F82, "\u1f0a\u0399"},       // ᾂ -> ἊΙ
	{0x1F83, "\u1f0b\u0399"},       // ᾃ -> ἋΙ
	{0x1F84, "\u1f0c\u0399"},       // ᾄ -> ἌΙ
	{0x1F85, "\u1f0d\u0399"},       // ᾅ -> ἍΙ
	{0x1F86, "\u1f0e\u0399"},       // ᾆ -> ἎΙ
	{0x1F87, "\u1f0f\u0399"},       // ᾇ -> ἏΙ
	{0x1F88, "\u1f08\u0399"},       // ᾈ -> ἈΙ
	{0x1F89, "\u1f09\u0399"},       // ᾉ -> ἉΙ
	{0x1F8A, "\u1f0a\u0399"},       // ᾊ -> ἊΙ
	{0x1F8B, "\u1f0b\u0399"},       // ᾋ -> ἋΙ
	{0x1F8C, "\u1f0c\u0399"},       // ᾌ -> ἌΙ
	{0x1F8D, "\u1f0d\u0399"},       // ᾍ -> ἍΙ
	{0x1F8E, "\u1f0e\u0399"},       // ᾎ -> ἎΙ
	{0x1F8F, "\u1f0f\u0399"},       // ᾏ -> ἏΙ
	{0x1F90, "\u1f28\u0399"},       // ᾐ -> ἨΙ
	{0x1F91, "\u1f29\u0399"},       // ᾑ -> ἩΙ
	{0x1F92, "\u1f2a\u0399"},       // ᾒ -> ἪΙ
	{0x1F93, "\u1f2b\u0399"},       // ᾓ -> ἫΙ
	{0x1F94, "\u1f2c\u0399"},       // ᾔ -> ἬΙ
	{0x1F95, "\u1f2d\u0399"},       // ᾕ -> ἭΙ
	{0x1F96, "\u1f2e\u0399"},       // ᾖ -> ἮΙ
	{0x1F97, "\u1f2f\u0399"},       // ᾗ -> ἯΙ
	{0x1F98, "\u1f28\u0399"},       // ᾘ -> ἨΙ
	{0x1F99, "\u1f29\u0399"},       // ᾙ -> ἩΙ
	{0x1F9A, "\u1f2a\u0399"},       // ᾚ -> ἪΙ
	{0x1F9B, "\u1f2b\u0399"},       // ᾛ -> ἫΙ
	{0x1F9C, "\u1f2c\u0399"},       // ᾜ -> ἬΙ
	{0x1F9D, "\u1f2d\u0399"},       // ᾝ -> ἭΙ
	{0x1F9E, "\u1f2e\u0399"},       // ᾞ -> ἮΙ
	{0x1F9F, "\u1f2f\u0399"},       // ᾟ -> ἯΙ
	{0x1FA0, "\u1f68\u0399"},       // ᾠ -> ὨΙ
	{0x1FA1, "\u1f69\u0399"},       // ᾡ -> ὩΙ
	{0x1FA2, "\u1f6a\u0399"},       // ᾢ -> ὪΙ
	{0x1FA3, "\u1f6b\u0399"},       // ᾣ -> ὫΙ
	{0x1FA4, "\u1f6c\u0399"},       // ᾤ -> ὬΙ
	{0x1FA5, "\u1f6d\u0399"},       // ᾥ -> ὭΙ
	{0x1FA6, "\u1f6e\u0399"},       // ᾦ -> ὮΙ
	{0x1FA7, "\u1f6f\u0399"},       // ᾧ -> ὯΙ
	{0x1FA8, "\u1f68\u0399"},       // ᾨ -> ὨΙ
	{0x1FA9, "\u1f69\u0399"},       // ᾩ -> ὩΙ
	{0x1FAA, "\u1f6a\u0399"},       // ᾪ -> ὪΙ
	{0x1FAB, "\u1f6b\u0399"},       // ᾫ -> ὫΙ
	{0x1FAC, "\u1f6c\u0399"},       // ᾬ -> ὬΙ
	{0x1FAD, "\u1f6d\u0399"},       // ᾭ -> ὭΙ
	{0x1FAE, "\u1f6e\u0399"},       // ᾮ -> ὮΙ
	{0x1FAF, "\u1f6f\u0399"},       // ᾯ -> ὯΙ
	{0x1FB2, "\u1fba\u0399"},       // ᾲ -> ᾺΙ
	{0x1FB3, "\u0391\u0399"},       // ᾳ -> ΑΙ
	{0x1FB4, "\u0386\u0399"},       // ᾴ -> ΆΙ
	{0x1FB6, "\u0391\u0342"},       // ᾶ -> Α͂
	{0x1FB7, "\u0391\u0342\u0399"}, // ᾷ -> Α͂Ι
	{0x1FBC, "\u0391\u0399"},       // ᾼ -> ΑΙ
	{0x1FC2, "\u1fca\u0399"},       // ῂ -> ῊΙ
	{0x1FC3, "\u0397\u0399"},       // ῃ -> ΗΙ
	{0x1FC4, "\u0389\u0399"},       // ῄ -> ΉΙ
	{0x1FC6, "\u0397\u0342"},       // ῆ -> Η͂
	{0x1FC7, "\u0397\u0342\u0399"}, // ῇ -> Η͂Ι
	{0x1FCC, "\u0397\u0399"},       // ῌ -> ΗΙ
	{0x1FD2, "\u0399\u0308\u0300"}, // ῒ -> Ϊ̀
	{0x1FD3, "\u0399\u0308\u0301"}, // ΐ -> Ϊ́
	{0x1FD6, "\u0399\u0342"},       // ῖ -> Ι͂
	{0x1FD7, "\u0399\u0308\u0342"}, // ῗ -> Ϊ͂
	{0x1FE2, "\u03a5\u0308\u0300"}, // ῢ -> Ϋ̀
	{0x1FE3, "\u03a5\u0308\u0301"}, // ΰ -> Ϋ́
	{0x1FE4, "\u03a1\u0313"},       // ῤ -> Ρ̓
	{0x1FE6, "\u03a5\u0342"},       // ῦ -> Υ͂
	{0x1FE7, "\u03a5\u0308\u0342"}, // ῧ -> Ϋ͂
	{0x1FF2, "\u1ffa\u0399"},       // ῲ -> ῺΙ
	{0x1FF3, "\u03a9\u0399"},       // ῳ -> ΩΙ
	{0x1FF4, "\u038f\u0399"},       // ῴ -> ΏΙ
	{0x1FF6, "\u03a9\u0342"},       // ῶ -> Ω͂
	{0x1FF7, "\u03a9\u0342\u0399"}, // ῷ -> Ω͂Ι
	{0x1FFC, "\u03a9\u0399"},       // ῼ -> ΩΙ
	{0xFB00, "FF"},                 // ﬀ -> FF
	{0xFB01, "FI"},                 // ﬁ -> FI
	{0xFB02, "FL"},                 // ﬂ -> FL
	{0xFB03, "FFI"},                // ﬃ -> FFI
	{0xFB04, "FFL"},                // ﬄ -> FFL
	{0xFB05, "ST"},                 // ﬅ -> ST
	{0xFB06, "ST"},                 // ﬆ -> ST
	{0xFB13, "\u0544\u0546"},       // ﬓ -> ՄՆ
	{0xFB14, "\u0544\u0535"},       // ﬔ -> ՄԵ
	{0xFB15, "\u0544\u053b"},       // ﬕ -> ՄԻ
	{0xFB16, "\u054e\u0546"},       // ﬖ -> ՎՆ
	{0xFB17, "\u0544\u053d"},       // ﬗ -> ՄԽ
}
