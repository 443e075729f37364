package kafka

// Long strings: the memory Source.Strings gives the decoder, a ring per
// partition freed in the order the merge produces the partition's tuples,
// and the records that wait for it while it is full.

import (
	"errors"
	"fmt"
	"os"

	"github.com/saber-hx/saber-hx/buffer"
)

// DefaultStringBytes is the size of a partition's string memory unless
// Config.StringBytes says otherwise.
const DefaultStringBytes = 4 << 20

// errStringsFull is Strings' answer when the partition's string memory
// is full: the record waits (backlog) until FillSome frees some.
var errStringsFull = errors.New("kafka source: the partition's string memory is full")

// stringBytes is the size of a partition's string memory for cfg's n: a
// power of two, at least a page.
func stringBytes(n int) (int, error) {
	if n < 0 {
		return 0, fmt.Errorf("StringBytes %d: negative", n)
	}
	if n == 0 {
		n = DefaultStringBytes
	}
	if n > 1<<40 {
		return 0, fmt.Errorf("StringBytes %d: too large", n)
	}
	size := os.Getpagesize()
	for size < n {
		size *= 2
	}
	return size, nil
}

// Strings gives the decoder (Config.Decoder, through its
// source.Options.Strings) n bytes for the long strings of the record it
// is decoding, in the memory of the record's partition. Pass it as
//
//	var src *kafka.Source
//	strs := func(n int) ([]byte, error) { return src.Strings(n) }
//	dec, err := source.NewJSONDecoder(layout, source.JSONOptions{Options: source.Options{Strings: strs}})
//	...
//	src, err = kafka.Open(ctx, kafka.Config{Decoder: dec, ...})
//
// (one decoder per source).
// The source calls the decoder only inside FillSome, which is when
// Strings may be called; called otherwise it returns an error. The bytes
// stay valid until the tuple they belong to has been returned by
// FillSome and FillSome is called again (or the source is closed).
//
// A partition's string memory is Config.StringBytes: while it is full
// the partition's records wait, and it is not fetched, until FillSome
// has produced its tuples. A record whose long strings need more than
// that is an error (FillSome's, naming the record).
func (s *Source) Strings(n int) ([]byte, error) {
	p := s.cur
	if p == nil {
		return nil, fmt.Errorf("kafka source %s: Strings called outside the source's decoding (only its Decoder may call it, from FillSome)", s.cfg.Topic)
	}
	if n <= 0 {
		return nil, nil
	}
	if n > s.strSize {
		return nil, fmt.Errorf("the record's long strings need %d bytes, more than a partition's string memory of %d (Config.StringBytes)", n, s.strSize)
	}
	if p.strs == nil {
		if s.closed {
			return nil, fmt.Errorf("kafka source %s: closed", s.cfg.Topic)
		}
		r, err := buffer.NewRing(s.strSize)
		if err != nil {
			return nil, fmt.Errorf("kafka source %s: string memory of partition %d: %w", s.cfg.Topic, p.id, err)
		}
		p.strs, p.strW, p.relEnd = r, 0, 0
		s.strParts = append(s.strParts, p.id)
	}
	b, ok, err := p.strs.TryReserve(n)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errStringsFull
	}
	p.strW = p.strs.Commit(n)
	return b, nil
}

// release frees (s.mu held) the string memory of the tuples FillSome has
// produced, which its caller is done with once FillSome is called again,
// and of the tuples dropped since (a revoke, a skipped line); it unmaps
// the memory of partitions no longer assigned. Then it decodes the
// records that waited for memory. Call it only where no tuple has been
// produced since FillSome was called.
func (s *Source) release() error {
	for i := 0; i < len(s.strParts); {
		p := s.parts[s.strParts[i]]
		if !p.assigned {
			// Its buffered tuples were dropped; those produced were
			// read by now.
			s.unmapStrings(p)
			s.strParts[i] = s.strParts[len(s.strParts)-1]
			s.strParts = s.strParts[:len(s.strParts)-1]
			continue
		}
		end := p.relEnd
		if p.n == 0 {
			end = p.strW // all of it produced or dropped
		}
		if end > p.strs.Freed() {
			p.strs.Free(end)
		}
		i++
	}
	for _, id := range s.strParts {
		p := s.parts[id]
		if p.bhead < len(p.backlog) {
			if err := s.drain(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// drain decodes p's records waiting for string memory while there is
// room; it resumes fetching p once they are all decoded. It runs in
// release, where no tuple produced holds memory.
func (s *Source) drain(p *part) error {
	// The first was admitted (counted) when it first waited; the others
	// are admitted as they come up.
	admitted := true
	for p.bhead < len(p.backlog) {
		r := p.backlog[p.bhead]
		if admitted || s.admit(p, r) {
			waits, err := s.decode(p, r, p.boff, p.bgot, p.bmal)
			if err != nil {
				return err
			}
			if waits && p.n == 0 && p.strs.Freed() < p.strW {
				// Full of the strings of lines dropped (Resume's Skip),
				// which nothing would free before the next poll.
				p.strs.Free(p.strW)
				admitted = true
				continue
			}
			if waits {
				return nil
			}
		}
		r.Recycle() // decoded, or not admitted: its memory back to the client's pools
		p.backlog[p.bhead] = nil
		p.bhead++
		p.boff, p.bgot, p.bmal = 0, 0, false
		admitted = false
	}
	p.backlog, p.bhead = p.backlog[:0], 0
	s.maybeResume(p)
	return nil
}

// unmapStrings unmaps p's string memory (s.mu held).
func (s *Source) unmapStrings(p *part) {
	if p.strs == nil {
		return
	}
	if err := p.strs.Close(); err != nil {
		s.logf("kafka source %s: partition %d: %v", s.cfg.Topic, p.id, err)
	}
	p.strs, p.strW, p.relEnd = nil, 0, 0
}
