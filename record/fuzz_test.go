package record

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseEvent: the reader never panics, and whatever it accepts encodes
// back to a line it accepts again with the same meaning.
func FuzzParseEvent(f *testing.F) {
	for _, name := range EventNames {
		line, _ := EncodeEvent(1, "r", nil, samples()[name])
		f.Add(line)
	}
	f.Add([]byte(`{"format":"metaharness.event/1","seq":1,"run":"r","event":"nope"}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"format":"metaharness.event/1","seq":1,"run":"r","event":"text","text":"a","text":"b"}`))
	f.Add([]byte(`{"format":"metaharness.event/1","seq":1,"run":"r","event":"text","Text":"a","request_id":null}`))
	// The reader takes values the schema does not (an unknown decision,
	// say): what it re-encodes here is the reader's, not a line a run writes.
	defer SetLineCheck(SetLineCheck(nil))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := ParseEvent(line)
		if err != nil {
			return
		}
		out, err := EncodeEvent(ev.Seq, ev.Run, ev.At, ev.Event)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", line, err)
		}
		again, err := ParseEvent(out)
		if err != nil {
			t.Fatalf("re-encoded line refused: %v\n%s", err, out)
		}
		out2, _ := EncodeEvent(again.Seq, again.Run, again.At, again.Event)
		if !bytes.Equal(out, out2) {
			t.Fatalf("encoding is not stable:\n%s%s", out, out2)
		}
	})
}

// FuzzParseCommand: the command reader never panics and accepted commands
// re-encode stably.
func FuzzParseCommand(f *testing.F) {
	f.Add([]byte(`{"format":"metaharness.command/1","id":"c1","command":"tool.decide","call_id":"t1","decision":{"decision":"deny","reason":"no"}}`))
	f.Add([]byte(`{"format":"metaharness.command/1","id":"c2","command":"halt","reason":null}`))
	f.Add([]byte(`{"format":"metaharness.command/1","id":"c3","command":"frame.set","frame":{}}`))
	f.Add([]byte(`{"format":"metaharness.command/1","id":"c4","command":"halt","command":"tool.decide","call_id":"t1","decision":{"decision":"allow"}}`))
	f.Add([]byte(`{"format":"metaharness.command/1","id":"c5","command":"tool.decide","Call_id":"t1","decision":{"decision":"allow","Decision":"deny"}}`))
	f.Add([]byte(`{"format":"metaharness.command/1","id":"c6","id":"c7","command":"tool.decide","call_id":"t1","decision":{"decision":"allow"},"x":1}`))
	defer SetLineCheck(SetLineCheck(nil)) // as in FuzzParseEvent
	f.Fuzz(func(t *testing.T, line []byte) {
		c, err := ParseCommand(line)
		if err != nil {
			return
		}
		out, err := EncodeCommand(c.ID, c.Command)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", line, err)
		}
		if _, err := ParseCommand(out); err != nil {
			t.Fatalf("re-encoded command refused: %v\n%s", err, out)
		}
	})
}

// FuzzSplitCanonical: any bytes are taken apart or not, never a panic; a
// line the reader parses and Canonical accepts splits into its own at, name
// and payload, and a line with anything changed in its header or a space
// added is not canonical.
func FuzzSplitCanonical(f *testing.F) {
	at := "2026-01-02T03:04:05.678Z"
	for _, name := range EventNames {
		line, _ := EncodeEvent(7, `r"1`, &at, samples()[name])
		f.Add(bytes.TrimSuffix(line, []byte("\n")))
	}
	f.Add([]byte(`{"format":"metaharness.event/1","seq":1,"run":"r","event":"text","text":"a","request_id":null}`))
	f.Add([]byte(`{"format":"metaharness.event/1", "seq":1,"run":"r","event":"text","text":"a"}`))
	f.Add([]byte(`{"format":"metaharness.event/1","seq":1,"run":"r\","event":"x"}`))
	defer SetLineCheck(SetLineCheck(nil)) // as in FuzzParseEvent
	f.Fuzz(func(t *testing.T, line []byte) {
		gotAt, name, payload, split := SplitCanonical(line)
		l, err := ParseEvent(line)
		if err != nil || !Canonical(line, l) {
			return
		}
		if !split {
			t.Fatalf("a canonical line does not split: %s", line)
		}
		want, _ := EncodePayload(l.Event)
		if string(name) != l.Name() || "{"+string(payload)+"}" != string(want) {
			t.Fatalf("%s split into %s and {%s}, want %s and %s", line, name, payload, l.Name(), want)
		}
		var a *string
		if gotAt != nil {
			var s string
			if err := json.Unmarshal(gotAt, &s); err != nil {
				t.Fatal(err)
			}
			a = &s
		}
		if (a == nil) != (l.At == nil) || (a != nil && *a != *l.At) {
			t.Fatalf("%s split with at %s", line, gotAt)
		}
	})
}
