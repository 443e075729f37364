package query

import "encoding/binary"

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
