package kind

import (
	"bufio"
	"fmt"
	"io"

	"github.com/metaharness/metaharness/record"
)

// MaxVendorLine bounds one line of a vendor's stdout (Claude Code's
// stream-json, codex app-server's JSON-RPC, the b10x loop's record): the
// longest real ones carry a tool's whole output, far below it. A longer line
// is read to its end and dropped, never held, and the session records that
// it was (so a child that writes an endless line costs the run at most this
// much memory).
const MaxVendorLine = 32 << 20

// WarnVendorLineTooLong: a line of the vendor's stdout past MaxVendorLine
// was dropped, unread.
const WarnVendorLineTooLong = "VENDOR_LINE_TOO_LONG"

// LineTooLong is the warning for a vendor line past MaxVendorLine.
func LineTooLong(vendor string) *record.Warning {
	return &record.Warning{Code: WarnVendorLineTooLong, Message: fmt.Sprintf("a line from %s longer than %d bytes was dropped unread, and is missing from the transcript too", vendor, MaxVendorLine)}
}

// EachLine reads r to its end, handing line each line (with its newline,
// when it has one) of at most max bytes, and calling long for each longer
// one, which is never held.
func EachLine(r io.Reader, max int, line func([]byte), long func()) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		l, tooLong, err := readBounded(br, max)
		switch {
		case tooLong:
			long()
		case len(l) > 0:
			line(l)
		}
		if err != nil {
			return
		}
	}
}

// readBounded reads one line of at most max bytes; a longer one is read to
// its end and reported as long, never held.
func readBounded(br *bufio.Reader, max int) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > max {
				long, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return line, long, err
		}
	}
}
