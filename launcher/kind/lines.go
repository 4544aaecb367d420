package kind

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/metaharness/metaharness/internal/jsonscan"
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

// Opaque is a vendor line no mapping takes, kept by its digest and its
// line number; typ and subtype are what the line said it was, left out
// when nil or blank.
func Opaque(raw []byte, line uint64, typ, subtype *string) *record.Opaque {
	sum := sha256.Sum256(raw)
	if typ != nil && *typ == "" {
		typ = nil
	}
	if subtype != nil && *subtype == "" {
		subtype = nil
	}
	return &record.Opaque{VendorType: typ, VendorSubtype: subtype, Digest: hex.EncodeToString(sum[:]), SourceLine: &line}
}

// TopStrings reads the members keys name off a vendor line's top level,
// each into its place in to, without decoding the rest, so that the line
// is decoded once, into what its kind calls for. The keys are matched
// exactly, as the vendor writes them. False: the line is not a JSON
// object, or one of them is not a string.
func TopStrings(raw []byte, keys []string, to ...*string) bool {
	ok := true
	err := jsonscan.Members(raw, func(key, val []byte) {
		for i, k := range keys {
			if string(key) == k {
				s, err := jsonscan.String(val)
				ok = ok && err == nil
				*to[i] = s
				return
			}
		}
	})
	return ok && err == nil
}
