// Package doubling holds append for slices that collect a whole output:
// a validated run's input and output, the reference's results, a test's
// collected tuples.
package doubling

import "slices"

// Append is append that doubles a full slice's capacity. Past 256
// elements append grows a slice by about a quarter, so a slice that
// collects megabytes batch by batch is copied several times over its
// final size; doubling copies it at most once more.
func Append[T any](s []T, v ...T) []T {
	if cap(s)-len(s) < len(v) {
		s = slices.Grow(s, max(len(s), len(v)))
	}
	return append(s, v...)
}
