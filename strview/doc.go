// Package strview holds string values inside the engine's fixed-size
// tuples: a VARCHAR column is a 16-byte view, so a tuple keeps its fixed
// size and its column offsets whatever the strings' lengths.
//
// # Layout
//
// The view is the string view of Arrow and DuckDB (Umbra's "German string"):
//
//	bytes  0..4   length, uint32 little-endian
//	bytes  4..8   the string's first 4 bytes, zero-padded
//	bytes  8..16  length <= MaxInline: the string's bytes 4..12, zero-padded
//	              length >  MaxInline: the address of the string's bytes,
//	                                   uint64 little-endian
//
// Most keys of a stream (country codes, URLs' hosts, short names) fit in 12
// bytes and then live wholly in the tuple. For any length the first 8 bytes
// decide most comparisons: two views whose length and prefix differ are
// unequal without following a pointer, and the prefix orders them.
//
// The zero padding is part of the format: Equal compares inline views as
// two 64-bit words, so a view must be written by Put or PutRef (a zeroed
// 16-byte slot is the empty string).
//
// # Where the bytes of a long string live
//
// A long string's bytes are outside the Go heap: in an Arena (memory this
// package maps with mmap) or in memory the engine already maps, such as a
// stream's ring, whose task bytes a source can point into without a copy
// (PutRef). An address stored as an integer is invisible to the garbage
// collector, so it must not point into the Go heap, where the collector
// could free or move what it names; memory mapped outside the heap is
// neither scanned nor freed by it, and the race detector's checkptr
// accepts pointers into it.
//
// # Lifetime
//
// A view is valid for as long as the bytes it points to: until the Reset or
// Free of the arena that holds them, or until the ring frees the task whose
// bytes it references. Copying a view copies the reference, not the string;
// an output that outlives the task (a window's group key, a sink's row)
// must copy the string itself (Put into an arena of its own, or Bytes
// appended to its own buffer). Inline views hold no reference and are
// always valid.
//
// # Matching
//
// Like is SQL's LIKE compiled once per pattern, with fast paths for the
// common shapes (equality, prefix, suffix, substring) and a general matcher
// whose time is bounded by the product of the pattern's and the string's
// lengths.
package strview
