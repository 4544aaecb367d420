package traceir

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"runtime"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

// MaxLineBytes bounds one event line project reads. A projection holds one
// line at a time, never the stream, so this is what bounds its memory for
// the lines; a run writes no longer one (a vendor line past 32 MiB is
// dropped unread, launcher/kind's MaxVendorLine).
const MaxLineBytes = 64 << 20

// Stream is an event stream and the name it is known by in errors. It is
// read from its start for each pass a projection makes, never held whole:
// its bytes are the first size bytes of r, so a file that grows while it is
// projected is read to the same length on every pass. A stream that can be
// read only once (a pipe) cannot be one: the document's digest comes first,
// so the stream is read to its end before anything is written (project
// refuses anything but a regular file).
type Stream struct {
	Name string
	r    io.ReaderAt
	size int64
}

// NewStream is the stream held in the first size bytes of r.
func NewStream(name string, r io.ReaderAt, size int64) *Stream {
	return &Stream{Name: name, r: r, size: size}
}

// StreamOf is a stream held in memory.
func StreamOf(name string, data []byte) *Stream {
	return NewStream(name, bytes.NewReader(data), int64(len(data)))
}

// lineFunc takes a stream's n-th line (from 1), the offset it starts at,
// and its bytes without the newline, valid until it returns.
type lineFunc func(n int, off int64, line []byte) error

// each reads the stream's lines in order, feeding every byte to sum when
// it is not nil. A blank line and one longer than MaxLineBytes are refused
// by number, as is a stream of no line.
func (s *Stream) each(sum hash.Hash, fn lineFunc) (int, error) {
	var in io.Reader = io.NewSectionReader(s.r, 0, s.size)
	if sum != nil {
		in = io.TeeReader(in, sum)
	}
	br := bufio.NewReaderSize(in, 64<<10)
	var long []byte // a line longer than the reader's buffer, gathered
	var off int64
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > MaxLineBytes {
				return n, exit.Refuse(RefuseUnreadable, "%s line %d is longer than %d bytes (64 MiB), the longest event line project reads; no run writes one", s.Name, n+1, MaxLineBytes)
			}
			long = append(long, chunk...)
			continue
		}
		if err != nil && err != io.EOF {
			return n, exit.Refuse(RefuseUnreadable, "%s after line %d cannot be read: %v", s.Name, n, err)
		}
		line := chunk
		if len(long) > 0 {
			line = append(long, chunk...)
		}
		size := len(line)
		if len(line) > 0 {
			n++
			line = bytes.TrimSuffix(line, []byte("\n"))
			if len(line) > MaxLineBytes {
				return n, exit.Refuse(RefuseUnreadable, "%s line %d is longer than %d bytes (64 MiB), the longest event line project reads; no run writes one", s.Name, n, MaxLineBytes)
			}
			if len(bytes.TrimSpace(line)) == 0 {
				return n, exit.Refuse(RefuseUnreadable, "%s line %d is blank; an event stream has one event per line", s.Name, n)
			}
			if ferr := fn(n, off, line); ferr != nil {
				return n, ferr
			}
		}
		off += int64(size)
		long = long[:0]
		if err == io.EOF {
			break
		}
	}
	if n == 0 {
		return 0, exit.Refuse(RefuseUnreadable, "%s holds no event line", s.Name)
	}
	return n, nil
}

// parse reads line n of s as an event line.
func (s *Stream) parse(n int, line []byte) (*record.EventLine, error) {
	l, err := record.ParseEvent(line)
	if err != nil {
		return nil, exit.Refuse(RefuseUnreadable, "%s line %d is not an event line (%v); nothing was projected", s.Name, n, err)
	}
	return l, nil
}

// parsedLine is one line of a stream as events hands it on: its place, its
// bytes, the event it holds and, when asked for,
// whether it is written exactly as record's Writer writes it.
type parsedLine struct {
	n         int
	off       int64
	line      []byte
	l         *record.EventLine
	canonical bool
	err       error
}

// eventBatch is the lines events parses together: what one worker takes.
const eventBatch = 128

// events is each with every line parsed (and, with canonical, held to the
// Writer's form), fn still seeing the lines in order. The parsing, most of
// a projection's time, is spread over the machine's cores: lines are read
// in batches, each batch is parsed by a worker, and the batches are handed
// on in the order they were read, with a few in flight at most, so that
// memory stays a few batches' worth whatever the stream's length.
func (s *Stream) events(sum hash.Hash, canonical bool, fn func(p *parsedLine) error) (int, error) {
	parse := func(b []parsedLine) {
		for i := range b {
			p := &b[i]
			if p.l, p.err = s.parse(p.n, p.line); p.err == nil && canonical {
				p.canonical = record.Canonical(p.line, p.l)
			}
		}
	}
	workers := runtime.GOMAXPROCS(0)
	type batch struct {
		lines []parsedLine
		done  chan struct{}
	}
	ordered := make(chan *batch, workers)
	work := make(chan *batch, workers)
	stop := make(chan struct{})
	for range workers {
		go func() {
			for b := range work {
				parse(b.lines)
				close(b.done)
			}
		}()
	}
	var (
		read    int
		readErr error
		reading = make(chan struct{})
	)
	errStopped := errors.New("stopped")
	go func() {
		defer close(reading)
		defer close(work)
		defer close(ordered)
		// A batch's lines are copied out of the reader's buffer into one
		// buffer of the batch's own, each line's end noted, and sliced
		// from it once the batch is full (the buffer may move as it grows).
		cur, arena, ends := &batch{done: make(chan struct{})}, []byte(nil), []int(nil)
		send := func() error {
			start := 0
			for i, end := range ends {
				cur.lines[i].line = arena[start:end:end]
				start = end
			}
			select {
			case ordered <- cur:
			case <-stop:
				return errStopped
			}
			work <- cur
			cur, arena, ends = &batch{done: make(chan struct{})}, nil, nil
			return nil
		}
		read, readErr = s.each(sum, func(n int, off int64, line []byte) error {
			cur.lines = append(cur.lines, parsedLine{n: n, off: off})
			arena = append(arena, line...)
			ends = append(ends, len(arena))
			if len(cur.lines) == eventBatch {
				return send()
			}
			return nil
		})
		// The lines read before a fault are parsed too: one of them may
		// fail first.
		if readErr != errStopped && len(cur.lines) > 0 {
			if err := send(); readErr == nil {
				readErr = err
			}
		}
	}()
	var fnErr error
	for b := range ordered {
		<-b.done
		for i := range b.lines {
			if fnErr != nil {
				break
			}
			if fnErr = b.lines[i].err; fnErr == nil {
				fnErr = fn(&b.lines[i])
			}
		}
		if fnErr != nil {
			select {
			case <-stop:
			default:
				close(stop)
			}
		}
	}
	<-reading
	if fnErr != nil {
		return 0, fnErr
	}
	if readErr != nil && readErr != errStopped {
		return read, readErr
	}
	return read, nil
}

// lineAt reads line n of s again, at the offset an earlier pass found it.
func (s *Stream) lineAt(n int, off int64, size int) (*record.EventLine, error) {
	b := make([]byte, size)
	if _, err := s.r.ReadAt(b, off); err != nil {
		return nil, s.changed(err)
	}
	return s.parse(n, b)
}

// changed is the refusal for a stream whose bytes differ between two
// passes over it: it was rewritten while it was projected.
func (s *Stream) changed(why any) error {
	return exit.Refuse(RefuseUnreadable, "%s changed while it was projected (%v); project a stream no run is still writing, or a copy of it", s.Name, why)
}

func digestOf(sum hash.Hash) string { return hex.EncodeToString(sum.Sum(nil)) }

func newDigest() hash.Hash { return sha256.New() }
