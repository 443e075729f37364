package query

import (
	"math"
	"strconv"
)

// AppendFloat appends f as every output and CAST to VARCHAR print a
// float: the shortest decimal that reads back as the float of bitSize bits
// (32 for a REAL), the infinities as Infinity and -Infinity (Java's
// Double.toString, thus Flink's, and PostgreSQL's spelling, where Go's is
// +Inf), NaN as NaN.
func AppendFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bitSize)
}
