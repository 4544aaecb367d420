package loopback

import "bytes"

// lineSink takes the lines of an event stream (the quota sniffer, the wire
// view's parsers).
type lineSink interface {
	// keep is asked about a line as it arrives, with what is known of it
	// so far (the whole line when one chunk holds it); false drops the
	// rest of the line unread. A sink bounds what it holds here.
	keep(prefix []byte) bool
	// line takes a whole kept line, its LF (and a CR before it) cut off.
	line(l []byte)
}

// lineSplitter cuts a byte stream into lines for a lineSink. A line that
// one chunk holds whole is handed over as a slice of the chunk (no copy);
// one that spans chunks is gathered while the sink keeps it.
type lineSplitter struct {
	buf  []byte
	skip bool // the sink dropped the current line
}

func (l *lineSplitter) write(b []byte, sink lineSink) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		switch {
		case l.skip:
		case len(l.buf) == 0 && i >= 0:
			if sink.keep(part) {
				sink.line(trimCR(part))
			}
		default:
			l.buf = append(l.buf, part...)
			if !sink.keep(l.buf) {
				l.buf, l.skip = l.buf[:0], true
			} else if i >= 0 {
				sink.line(trimCR(l.buf))
			}
		}
		if i < 0 {
			return
		}
		l.buf, l.skip = l.buf[:0], false
		b = b[i+1:]
	}
}

// end hands over a last line that had no LF, once the stream is over.
func (l *lineSplitter) end(sink lineSink) {
	if !l.skip && len(l.buf) > 0 {
		sink.line(trimCR(l.buf))
	}
	l.buf, l.skip = nil, false
}

func trimCR(l []byte) []byte {
	if n := len(l); n > 0 && l[n-1] == '\r' {
		return l[:n-1]
	}
	return l
}
