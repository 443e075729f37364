//go:build !amd64 || purego

package ysb

// copyShiftFast has no assembly on this platform (or under the purego
// tag): copyShift uses copyShiftGeneric.
func copyShiftFast(dst, src []byte, shift int64) bool { return false }
