package query

import (
	"encoding/binary"
	"errors"
)

// Group keys are encoded so that their bytes sort like their values:
// integers big-endian with the sign bit flipped, bytes columns as they are,
// concatenated in GROUP BY order. int32 columns take 4 bytes, every other
// integer expression 8 (see Query.KeyWidth). Engines and the reference
// evaluator share this encoding, so that their outputs compare byte for
// byte.

// AppendIntKey appends the encoding of integer v in width (4 or 8) bytes.
func AppendIntKey(dst []byte, v int64, width int) []byte {
	if width == 4 {
		return binary.BigEndian.AppendUint32(dst, uint32(int32(v))^(1<<31))
	}
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}

// DecodeIntKey decodes an integer encoded by AppendIntKey.
func DecodeIntKey(b []byte, width int) int64 {
	if width == 4 {
		return int64(int32(binary.BigEndian.Uint32(b) ^ (1 << 31)))
	}
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
}

// A string group key's canonical form, what rows are ordered by and
// compared with: NULL as the byte 0; a value as the byte 1, its bytes with
// every 0 written 0 0xFF, and the end 0 0. Byte order of the forms is the
// order of the strings (NULL first), whatever their lengths. (In the
// engine's kernels a string key is a number per distinct value; emitted
// rows are ordered by this form.)

// AppendStringKey appends the canonical form of string s (null: NULL).
func AppendStringKey(dst, s []byte, null bool) []byte {
	if null {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	for _, c := range s {
		if c == 0 {
			dst = append(dst, 0, 0xFF)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 0)
}

// DecodeStringKey decodes the canonical form at the start of b: the
// string (nil for NULL, which null reports) and the bytes it took.
func DecodeStringKey(b []byte) (s []byte, null bool, n int, err error) {
	if len(b) == 0 {
		return nil, false, 0, errors.New("string key: empty")
	}
	if b[0] == 0 {
		return nil, true, 1, nil
	}
	s = []byte{}
	for i := 1; i+1 < len(b); i++ {
		if b[i] != 0 {
			s = append(s, b[i])
			continue
		}
		switch b[i+1] {
		case 0:
			return s, false, i + 2, nil
		case 0xFF:
			s = append(s, 0)
			i++
		default:
			return nil, false, 0, errors.New("string key: a 0 byte not escaped")
		}
	}
	return nil, false, 0, errors.New("string key: no end")
}

// AppendNullableIntKey appends an integer key that can be NULL: the byte 0
// for NULL, else 1 and AppendIntKey's encoding.
func AppendNullableIntKey(dst []byte, v int64, width int, null bool) []byte {
	if null {
		return append(dst, make([]byte, width+1)...)
	}
	return AppendIntKey(append(dst, 1), v, width)
}

// AppendBoolKey appends a boolean key: 0 NULL, 1 false, 2 true.
func AppendBoolKey(dst []byte, v, null bool) []byte {
	switch {
	case null:
		return append(dst, 0)
	case v:
		return append(dst, 2)
	}
	return append(dst, 1)
}
