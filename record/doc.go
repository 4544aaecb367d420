// Package record is the wire both directions: metaharness.event/1 lines on a
// run's stdout and metaharness.command/1 lines on its stdin, one JSON object
// per line, each carrying its own format tag so that a truncated capture is
// still self-describing.
//
// Rules the types and the writer keep (reference notes §1–§3):
//   - seq counts from 1 and is assigned in one place, the Writer;
//   - every absent payload field is written as an explicit null, because a
//     missing key would read the same as an older build that never knew it;
//   - "at" is the one key left out when absent: it is only ever the vendor's
//     own timestamp, and metaharness never reads a clock for it;
//   - stream.closed is always the last line and only the Writer writes it;
//   - a reader ignores unknown fields and refuses unknown event or command
//     names and unknown or missing format tags, each with its own error.
package record

// EventFormat and CommandFormat are the tags every line carries.
const (
	EventFormat   = "metaharness.event/1"
	CommandFormat = "metaharness.command/1"
)
