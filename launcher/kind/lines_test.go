package kind

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// TestEachLine: each line is handed on whole, with its newline; one past
// the bound is reported and never handed on, however it is split across
// the reader's buffer, and the lines after it are read as ever; a last
// line without a newline counts.
func TestEachLine(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // past the 64 KiB buffer, so read in chunks
	in := "one\n" + long + "\ntwo\n" + strings.Repeat("y", 160) + "\nlast"
	var got []string
	longs := 0
	EachLine(strings.NewReader(in), 150, func(l []byte) { got = append(got, string(l)) }, func() { longs++ })
	want := []string{"one\n", "two\n", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") || longs != 2 {
		t.Errorf("lines %q and %d too long, want %q and 2", got, longs, want)
	}
	got, longs = nil, 0
	EachLine(strings.NewReader(in), 300<<10, func(l []byte) { got = append(got, string(l)) }, func() { longs++ })
	if len(got) != 5 || got[1] != long+"\n" || longs != 0 {
		t.Errorf("with room for the long line: %d lines, %d too long", len(got), longs)
	}
}

func TestReadBoundedDropsALongLine(t *testing.T) {
	in := strings.Repeat("x", 300) + "\nshort\n"
	br := bufio.NewReaderSize(strings.NewReader(in), 16)
	line, long, err := readBounded(br, 100)
	if !long || line != nil || err != nil {
		t.Fatalf("long line: %q %v %v", line, long, err)
	}
	line, long, err = readBounded(br, 100)
	if long || string(line) != "short\n" || err != nil {
		t.Fatalf("next line: %q %v %v", line, long, err)
	}
	if _, _, err := readBounded(br, 100); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
}
