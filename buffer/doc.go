// Package buffer holds the per-stream input buffers of the engine.
//
// The central type is Ring, a circular byte buffer with a single producer
// (the stream's ingest goroutine) and in-order release by the consumer side
// (the result stage frees a task's bytes after merging that task's results,
// in task order). The ring never overwrites unreleased data: a producer that
// runs out of space waits in Reserve until enough bytes have been freed.
//
// Every byte range handed out by Ring is a single contiguous []byte, even
// when it wraps past the end of the ring. This is done with a mirrored
// mapping: the same memfd is mapped twice, back to back, so that byte i and
// byte i+Size() are the same physical memory. Tasks can therefore be handed
// to parsers and kernels as plain slices with no copy and no split.
//
// The package is Linux-only and uses raw syscalls (no cgo).
package buffer
