//go:build cuda && !cgo

package device

// A cuda build needs cgo: gorgonia.org/cu and the pinned-memory shim are
// cgo code. This declaration fails the build with a name that says so.
var _ = cuda_build_needs_cgo__set_CGO_ENABLED_1_and_a_C_compiler
