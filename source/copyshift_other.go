//go:build !amd64 || purego

package source

// copyShiftFast has no assembly on this platform (or under the purego
// tag): CopyShift uses copyShiftPieces.
func copyShiftFast(dst, src []byte, tupleSize int, shift int64) bool { return false }

// copyAddFast has no assembly on this platform (or under the purego tag):
// CopyAdd copies and adds in Go.
func copyAddFast(dst, src []byte, delta []int64) bool { return false }
