package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// failingAfter takes n lines, then fails every write, as a full disk does.
type failingAfter struct {
	n    int
	took bytes.Buffer
}

func (f *failingAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, syscall.ENOSPC
	}
	f.n--
	return f.took.Write(p)
}

// TestEachSinkFailsOnItsOwn: when one sink stops taking lines, the others
// still get every line with seq from 1 and no repeat, stream.closed counts
// what they got, the failure is a STREAM_SINK_FAILED warning in the stream
// that still works, and the handler hears of it exactly once.
func TestEachSinkFailsOnItsOwn(t *testing.T) {
	var stdout bytes.Buffer
	file := &failingAfter{n: 2}
	var heard []SinkFailure
	w := NewStream("r1", func(f SinkFailure) { heard = append(heard, f) },
		Sink{Name: "stdout", W: &stdout}, Sink{Name: "--events /dev/full", W: file})
	for range 4 {
		if err := w.Emit(&Warning{Code: "X", Message: "m"}); err != nil {
			t.Fatalf("Emit: %v (a line one sink took is written)", err)
		}
	}
	if err := w.Close(ReasonCompleted, nil); err != nil {
		t.Fatalf("Close: %v", err)
	}
	lines := parseAll(t, stdout.String())
	for i, l := range lines {
		if l.Seq != uint64(i+1) {
			t.Fatalf("line %d has seq %d", i+1, l.Seq)
		}
	}
	if c := CheckCompleteness(lines); c.State != Complete {
		t.Fatalf("stdout: %s", c.Line())
	}
	if len(lines) != 6 {
		t.Fatalf("%d lines on stdout, want 4 events, the failure's warning and stream.closed", len(lines))
	}
	warn, ok := lines[3].Event.(*Warning)
	if !ok || warn.Code != WarnSinkFailed || !strings.Contains(warn.Message, "--events /dev/full") || !strings.Contains(warn.Message, "line 3") {
		t.Fatalf("line 4 is %+v, want the STREAM_SINK_FAILED warning", lines[3].Event)
	}
	if len(heard) != 1 || heard[0].Sink != "--events /dev/full" || heard[0].Line != 3 || !strings.Contains(heard[0].Error, "no space left") {
		t.Fatalf("handler heard %+v", heard)
	}
	if got := w.Failures(); len(got) != 1 || got[0] != heard[0] {
		t.Fatalf("Failures() %+v", got)
	}
	if n := len(parseAll(t, file.took.String())); n != 2 {
		t.Fatalf("the failed sink holds %d lines, want the 2 it took", n)
	}
}

// TestDevFullSink: /dev/full itself as the failing sink.
func TestDevFullSink(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full here")
	}
	defer full.Close()
	var stdout bytes.Buffer
	w := NewStream("r1", nil, Sink{Name: "stdout", W: &stdout}, Sink{Name: "--events /dev/full", W: full})
	_ = w.Emit(&Warning{Code: "X", Message: "m"})
	_ = w.Close(ReasonError, nil)
	lines := parseAll(t, stdout.String())
	if c := CheckCompleteness(lines); c.State != Complete || len(lines) != 3 {
		t.Fatalf("stdout %s, %d lines", c.Line(), len(lines))
	}
}

// TestNoSinkLeft: a line no sink took is an error, and seq is not spent.
func TestNoSinkLeft(t *testing.T) {
	w := NewWriter(&failingAfter{n: 1}, "r1")
	if err := w.Emit(&Warning{Code: "X", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Emit(&Warning{Code: "X", Message: "m"}); !errors.Is(err, ErrNoSink) {
		t.Fatalf("err %v, want ErrNoSink", err)
	}
	if w.Lines() != 1 {
		t.Fatalf("Lines() %d, want 1", w.Lines())
	}
}

// What Precede puts first lands before the next line, whoever writes it, and
// once; nil puts nothing; Close settles it too.
func TestPrecede(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, "r1")
	calls := 0
	w.Precede(func() Event { calls++; return &Warning{Code: "FIRST", Message: "m"} })
	if err := w.Emit(&Warning{Code: "SECOND", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Emit(&Warning{Code: "THIRD", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	w.Precede(func() Event { return nil })
	w.Settle()
	w.Precede(func() Event { return &Warning{Code: "LAST", Message: "m"} })
	if err := w.Close(ReasonCompleted, nil); err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var v struct{ Code, Event string }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		codes = append(codes, v.Code+v.Event)
	}
	want := "FIRSTwarning SECONDwarning THIRDwarning LASTwarning stream.closed"
	if got := strings.Join(codes, " "); got != want || calls != 1 {
		t.Fatalf("lines %q (first called %d times), want %q once", got, calls, want)
	}
}

// TestWrittenLinesAreCanonical: every line a Writer writes is canonical,
// and the same event spelled otherwise (a space, another key order, an
// escape the encoder does not write) is not.
func TestWrittenLinesAreCanonical(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, "r")
	at := "2026-01-02T03:04:05.678Z"
	for _, name := range EventNames {
		if name == "stream.closed" {
			continue
		}
		if err := w.EmitAt(at, samples()[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ReasonCompleted, nil); err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSuffix(b.Bytes(), []byte("\n")), []byte("\n")) {
		l, err := ParseEvent(line)
		if err != nil {
			t.Fatal(err)
		}
		if !Canonical(line, l) {
			t.Errorf("a written line is not canonical: %s", line)
		}
	}
	text := `{"format":"metaharness.event/1","seq":1,"run":"r","event":"text","text":"a","request_id":null}`
	if l, err := ParseEvent([]byte(text)); err != nil || !Canonical([]byte(text), l) {
		t.Fatalf("the control is not canonical: %v", err)
	}
	for _, line := range []string{
		`{"format":"metaharness.event/1","seq":1,"run":"r","event":"text","request_id":null,"text":"a"}`,
		`{"format":"metaharness.event/1","seq":1, "run":"r","event":"text","text":"a","request_id":null}`,
		`{"seq":1,"format":"metaharness.event/1","run":"r","event":"text","text":"a","request_id":null}`,
		`{"format":"metaharness.event/1","seq":1,"run":"\u0072","event":"text","text":"a","request_id":null}`,
	} {
		l, err := ParseEvent([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if Canonical([]byte(line), l) {
			t.Errorf("a line the writer does not write is canonical: %s", line)
		}
	}
}
