package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/saber-hx/saber-hx/source"
	"github.com/saber-hx/saber-hx/sql"
	"github.com/saber-hx/saber-hx/strview"
)

// parallelDecoder decodes a CSV or JSON input on several goroutines, so
// that decoding, the cost of such a source, grows with the cores: a
// reader goroutine cuts the input into blocks of whole records
// (source.CutRecords), the decoders each decode blocks into tuples (long
// strings in the block's arena), and Fill, on the source's feed
// goroutine, hands the tuples on in the input's order, so that event
// time, lateness and the first malformed record are as one decoder gives
// them. The blocks are decoded on goroutines of their own beside the
// engine's workers, rather than by the workers as part of a task: a task
// is cut from the ring by bytes of tuples, and a block's count of tuples
// is only known once it is decoded.
type parallelDecoder struct {
	src         *sql.Source
	name        string
	dict        *strview.Dict // the source's dictionary-encoded columns' (nil: none)
	r           io.Reader
	csv         bool
	header      []byte // a CSV header (and the empty lines before it), given again to every block's decoder
	headerLines int64  // the lines of header
	block       int    // the bytes read at a time: a block is its whole records

	work  chan *decodeBlock // to the decoders
	order chan *decodeBlock // the blocks in input order, for Fill
	free  chan *decodeBlock // blocks handed on, their buffers and arenas for reuse
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once

	cur       *decodeBlock   // the block Fill is handing on
	off       int            // its tuples handed on
	done      []*decodeBlock // the blocks the last Fill exhausted: their strings are freed at the next
	malformed int64
	err       error
}

// decodeBlock is a stretch of whole records and what decoding it gave.
type decodeBlock struct {
	// raw is the header (CSV with one), then the records, in the block's
	// arena (strings): the views of their long strings point into it
	// (source.Options.RefInput), valid as long as the tuples.
	raw       []byte
	skipLines int64 // lines of raw before the records: the header's
	firstLine int64 // the input's line number of the records' first line
	last      bool  // the input ends with it

	tuples    []byte
	strings   *strview.Arena
	malformed int64
	err       error
	ready     chan struct{}
}

// decodeBlockSize is the bytes of input a block holds. The blocks in
// flight (a few per decoder: read ahead, decoding, waiting for Fill) are
// memory touched fresh at the start of a run, at the cost of a page fault
// per page, which a short run over a file pays in full; smaller blocks
// cost more per byte in hand-offs and decoders made (docs/performance.md,
// "Decoding blocks").
const decodeBlockSize = 512 << 10

// newParallelDecoder starts decoders goroutines over r, the input of a
// csv or json source called name, read block bytes at a time; Close
// stops them.
func newParallelDecoder(src *sql.Source, name string, dict *strview.Dict, r io.Reader, decoders, block int) (*parallelDecoder, error) {
	// Check the layout and options once, as the decoders will make them.
	if _, err := newDecoder(src, name, decoderMemory{dict: dict, strings: func(int) ([]byte, error) { return nil, nil }}); err != nil {
		return nil, err
	}
	p := &parallelDecoder{src: src, name: name, dict: dict, r: r, csv: src.Format == "csv", block: block,
		work: make(chan *decodeBlock, decoders), order: make(chan *decodeBlock, 2*decoders), stop: make(chan struct{}),
		free: make(chan *decodeBlock, 3*decoders+2)}
	p.wg.Add(decoders + 1)
	go p.read()
	for range decoders {
		go p.decode()
	}
	return p, nil
}

// read cuts the input into blocks and hands them to the decoders and, in
// order, to Fill.
func (p *parallelDecoder) read() {
	defer p.wg.Done()
	defer close(p.order)
	defer close(p.work)
	buf := make([]byte, 0, p.block)
	line := int64(1)
	first := true
	for {
		n, err := io.ReadFull(p.r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			p.send(&decodeBlock{err: fmt.Errorf("read %s after line %d: %w", p.name, line-1+int64(bytes.Count(buf, []byte{'\n'})), err), last: true, ready: closedChan})
			return
		}
		if first && p.csv && p.src.Header {
			// The header stays with the decoders: each block's decoder
			// maps its fields by it.
			cut := source.CutHeader(buf, ',')
			if len(buf) == 0 && eof {
				p.send(&decodeBlock{last: true, ready: closedChan}) // no input at all
				return
			}
			if cut == 0 && !eof {
				if len(buf) == cap(buf) && !p.grow(&buf) {
					p.send(&decodeBlock{err: &source.Error{Input: p.name, Line: 1, Msg: "header longer than the longest line the reader takes"}, last: true, ready: closedChan})
					return
				}
				continue
			}
			if cut == 0 {
				cut = len(buf)
			}
			p.header = append([]byte(nil), buf[:cut]...)
			p.headerLines = int64(bytes.Count(p.header, []byte{'\n'}))
			buf = buf[:copy(buf, buf[cut:])]
			line += p.headerLines
		}
		first = false
		cut := len(buf)
		if !eof {
			// The decoder drops a byte order mark that starts the input:
			// a quote after it opens a quoted field for the cut too.
			mark := 0
			if line == 1 && p.header == nil {
				mark = len(buf) - len(source.TrimBOM(buf))
			}
			if cut = source.CutRecords(buf[mark:], p.csv, ','); cut > 0 {
				cut += mark
			}
			if cut == 0 { // a record longer than the block
				if !p.grow(&buf) {
					p.send(&decodeBlock{err: &source.Error{Input: p.name, Line: line, Msg: "record longer than the longest the reader takes"}, last: true, ready: closedChan})
					return
				}
				continue
			}
		}
		b := p.newBlock()
		b.firstLine, b.last = line, eof
		b.raw = b.strings.Alloc(len(p.header) + cut)
		copy(b.raw[copy(b.raw, p.header):], buf[:cut])
		b.skipLines = p.headerLines
		line += int64(bytes.Count(buf[:cut], []byte{'\n'}))
		rest := copy(buf, buf[cut:])
		buf = buf[:rest]
		if cap(buf) > p.block && rest <= p.block/2 {
			// Grown for a long record: back to blocks of the block size,
			// or every later block would be as large (fewer blocks to
			// share among the decoders, more memory in flight).
			buf = append(make([]byte, 0, p.block), buf...)
		}
		if !p.send(b) {
			return
		}
		select {
		case p.work <- b:
		case <-p.stop:
			return
		}
		if eof {
			return
		}
	}
}

// newBlock is a block handed on before, emptied, or a new one: reusing
// their buffers and arenas spares the faults of fresh memory.
func (p *parallelDecoder) newBlock() *decodeBlock {
	select {
	case b := <-p.free:
		*b = decodeBlock{tuples: b.tuples[:0], strings: b.strings, ready: make(chan struct{})}
		b.strings.Reset()
		return b
	default:
		return &decodeBlock{strings: strview.NewArena(0), ready: make(chan struct{})}
	}
}

// recycle offers b, handed on, for reuse; its arena is freed where there
// is no room for it.
func (p *parallelDecoder) recycle(b *decodeBlock) {
	if b.strings == nil {
		return // an error's or the end's, never decoded
	}
	select {
	case p.free <- b:
	default:
		b.strings.Free()
	}
}

var errDecoderClosed = errors.New("parallel decoder: Fill after Close")

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// grow doubles buf's capacity up to source.MaxLineSize: false at it.
func (p *parallelDecoder) grow(buf *[]byte) bool {
	if cap(*buf) >= source.MaxLineSize {
		return false
	}
	nb := make([]byte, len(*buf), min(2*cap(*buf), source.MaxLineSize))
	copy(nb, *buf)
	*buf = nb
	return true
}

// send hands b to Fill: false when Close stopped the decoding.
func (p *parallelDecoder) send(b *decodeBlock) bool {
	select {
	case p.order <- b:
		return true
	case <-p.stop:
		return false
	}
}

// decode decodes blocks until the input ends.
func (p *parallelDecoder) decode() {
	defer p.wg.Done()
	// The goroutine's caches of the dictionary, which each block's
	// decoder uses in turn: made per block, they met every string anew.
	caches := source.DictCaches{}
	for b := range p.work {
		p.decodeBlock(b, caches)
		close(b.ready)
	}
}

func (p *parallelDecoder) decodeBlock(b *decodeBlock, caches source.DictCaches) {
	d, err := newDecoder(p.src, p.name, decoderMemory{dict: p.dict, caches: caches, strings: source.ArenaStrings(b.strings), refInput: true,
		continues: p.header == nil && b.firstLine > 1})
	if err != nil {
		b.err = err
		return
	}
	ts := d.TupleSize()
	// A record is at least a line (a CSV field may hold newlines, JSON
	// lines have one record each): room for a tuple per line, so that the
	// buffer is made once, at its size, rather than grown by copies into
	// fresh memory; and an eighth more, so that the later blocks this
	// one's buffer serves, whose lines are as many give or take a few,
	// fit in it (made anew for each, it was fresh memory every time).
	if need := (bytes.Count(b.raw, []byte{'\n'}) + 1) * ts; cap(b.tuples) < need {
		b.tuples = make([]byte, 0, need+need/8)
	}
	for src := b.raw; ; {
		if len(b.tuples) == cap(b.tuples) {
			b.tuples = append(b.tuples, make([]byte, cap(b.tuples))...)[:len(b.tuples)]
		}
		dst := b.tuples[len(b.tuples):cap(b.tuples)]
		t, c, err := d.Decode(dst, src, true)
		b.tuples = b.tuples[:len(b.tuples)+t*ts]
		src = src[c:]
		if err != nil {
			var se *source.Error
			if errors.As(err, &se) {
				se.Line += b.firstLine - 1 - b.skipLines
			}
			b.err = err
			break
		}
		if len(src) == 0 {
			break
		}
	}
	b.malformed = d.Malformed()
}

// Fill writes the next tuples into dst, whole tuples, in the input's
// order; io.EOF at the end. The long strings of the tuples it returns
// stay valid until the next Fill (the caller copies them into the
// streams' heaps as it commits them: CommitCopy).
func (p *parallelDecoder) Fill(dst []byte) (int, error) {
	for _, b := range p.done {
		p.recycle(b)
	}
	p.done = p.done[:0]
	n := 0
	for n < len(dst) {
		if p.cur == nil {
			if p.err != nil {
				return n, p.err
			}
			b, ok := <-p.order
			if !ok {
				p.err = io.EOF
				return n, p.err
			}
			<-b.ready
			p.cur, p.off = b, 0
		}
		b := p.cur
		c := copy(dst[n:], b.tuples[p.off:])
		ts := p.src.Schema.TupleSize
		c = c / ts * ts
		if c == 0 && p.off < len(b.tuples) {
			return n, nil // dst has no room for a whole tuple
		}
		n += c
		p.off += c
		if p.off == len(b.tuples) {
			p.malformed += b.malformed
			if b.err != nil {
				p.err = b.err
			} else if b.last {
				p.err = io.EOF
			}
			p.done = append(p.done, b)
			p.cur = nil
		}
	}
	return n, nil
}

// Malformed is the records the decoders skipped so far (on_error =
// 'skip'), of the blocks handed on.
func (p *parallelDecoder) Malformed() int64 { return p.malformed }

// Close stops the decoders and frees what they hold.
func (p *parallelDecoder) Close() {
	p.once.Do(func() {
		close(p.stop)
		p.wg.Wait() // read has closed order and work; the decoders are done
		// Every block is in one place now: handed on (done, cur), in
		// order (decoded or never given to a decoder: read stopped), or
		// free; a block in order may also be done.
		blocks := append(p.done, p.cur)
		for b := range p.order {
			blocks = append(blocks, b)
		}
		close(p.free)
		for b := range p.free {
			blocks = append(blocks, b)
		}
		freed := map[*decodeBlock]bool{}
		for _, b := range blocks {
			if b != nil && b.strings != nil && !freed[b] {
				freed[b] = true
				b.strings.Free()
			}
		}
		p.cur, p.done, p.err = nil, nil, errDecoderClosed
	})
}
