package launcher

import "io"

// plainWriter passes text through with its terminal escape sequences (ESC
// followed by a CSI, OSC, character-set or two-byte sequence) taken out. A vendor may
// colour its stderr whatever the stream is (codex's log lines do), and
// under a fleet's PTY that stderr lands in the session's transcript, where
// metaharness never asked for colour or cursor moves. A sequence split
// across writes is taken out all the same.
type plainWriter struct {
	w     io.Writer
	state escState
}

type escState uint8

const (
	escNone   escState = iota
	escStart           // after ESC
	escCSI             // inside ESC [ ... final byte
	escOSC             // inside ESC ] ... BEL or ESC \
	escOSCEsc          // inside an OSC, after an ESC
	escNF              // after ESC and an intermediate byte (ESC ( B)
)

func (p *plainWriter) Write(b []byte) (int, error) {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		switch p.state {
		case escNone:
			if c == 0x1b {
				p.state = escStart
			} else {
				out = append(out, c)
			}
		case escStart:
			switch c {
			case '[':
				p.state = escCSI
			case ']':
				p.state = escOSC
			default:
				if c >= 0x20 && c <= 0x2f {
					p.state = escNF
					break
				}
				p.state = escNone // a two-byte sequence
			}
		case escCSI:
			if c >= 0x40 && c <= 0x7e {
				p.state = escNone
			}
		case escOSC:
			if c == 0x07 {
				p.state = escNone
			} else if c == 0x1b {
				p.state = escOSCEsc
			}
		case escOSCEsc:
			p.state = escNone
		case escNF:
			if c >= 0x30 && c <= 0x7e {
				p.state = escNone
			}
		}
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}
