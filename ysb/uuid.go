package ysb

import "fmt"

// UUID is a 16-byte id stored in the order its canonical text form spells it,
// so lowercase text order equals byte order (sorting by bytes sorts the text).
type UUID [16]byte

const uuidTextLen = 36

// ParseUUID parses the canonical 8-4-4-4-12 hex form, either case.
func ParseUUID(s string) (UUID, error) {
	u, err := parseUUID(s)
	if err != nil {
		return UUID{}, fmt.Errorf("parse UUID %s: %w", quoteTrunc(s), err)
	}
	return u, nil
}

// parseUUID returns an error that does not repeat s, so callers with more
// context (file, line, column name) can quote s themselves exactly once.
func parseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != uuidTextLen {
		return u, fmt.Errorf("length %d, want %d (8-4-4-4-12 hex)", len(s), uuidTextLen)
	}
	j := 0
	for i := 0; i < uuidTextLen; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return u, fmt.Errorf("offset %d: want '-', got %q", i, s[i])
			}
			i++
			continue
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			bad := i
			if ok1 {
				bad = i + 1
			}
			return u, fmt.Errorf("offset %d: %q is not a hex digit", bad, s[bad])
		}
		u[j] = hi<<4 | lo
		j++
		i += 2
	}
	return u, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// String returns the lowercase canonical form.
func (u UUID) String() string {
	var b [uuidTextLen]byte
	return string(u.appendText(b[:0]))
}

const hexDigits = "0123456789abcdef"

// AppendCanonical appends the lowercase canonical form (8-4-4-4-12).
func (u UUID) AppendCanonical(dst []byte) []byte { return u.appendText(dst) }

// appendText appends the lowercase canonical form; CSV writers use it to avoid
// one string allocation per row.
func (u UUID) appendText(dst []byte) []byte {
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
	}
	return dst
}

// quoteTrunc quotes s for an error message, cutting it so that a garbage
// multi-megabyte "line" does not end up inside an error string.
func quoteTrunc(s string) string {
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q...(%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}
