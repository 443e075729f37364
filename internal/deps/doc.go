// Package deps holds no code: its tests hold the layering of saber-hx's
// packages (see dep_test.go and the README's Architecture section), from
// what `go list` reports, with and without the cuda build tag.
package deps
