package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/launcher/kinds"
	"github.com/metaharness/metaharness/record"
)

// ReplayC2 maps a recorded vendor transcript to the event stream the reader
// makes of it, closed as the run loop would close it. Tool calls come out as
// the reader presents them (no decision engine), so a replay pins the
// reader alone, byte for byte.
func ReplayC2(name string, transcript []byte) ([]byte, error) {
	k, _ := kinds.Lookup(name)
	rp, ok := k.(kind.Replayer)
	if !ok {
		return nil, fmt.Errorf("no transcript reader for kind %q", name)
	}
	return Replay(rp, "c2", transcript)
}

// Replay maps transcript through the kind's own reader under the run id run
// (ReplayC2, project --from).
func Replay(k kind.Replayer, run string, transcript []byte) ([]byte, error) {
	var out bytes.Buffer
	w := record.NewWriter(&out, run)
	r := k.NewTranscript()
	sc := bufio.NewScanner(bytes.NewReader(transcript))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		for _, it := range r.Read(sc.Bytes()) {
			var err error
			if it.At != "" {
				err = w.EmitAt(it.At, it.Event)
			} else {
				err = w.Emit(it.Event)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if e, ok := r.(kind.Ender); ok {
		for _, it := range e.End() {
			if err := w.Emit(it.Event); err != nil {
				return nil, err
			}
		}
	}
	if err := w.Close(k.CloseReason(r.Terminal()), nil); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// CheckC2 replays dir/<case>.in.jsonl and compares it with
// dir/<case>.expected.jsonl.
func CheckC2(kind, inPath string) error {
	in, err := os.ReadFile(inPath)
	if err != nil {
		return err
	}
	want, err := os.ReadFile(strings.TrimSuffix(inPath, ".in.jsonl") + ".expected.jsonl")
	if err != nil {
		return err
	}
	return CompareC2(kind, inPath, in, want)
}

// CompareC2 replays the transcript in and compares the stream with want;
// name says which vector, in errors.
func CompareC2(kind, name string, in, want []byte) error {
	got, err := ReplayC2(kind, in)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s: the replay moved:\n%s", name, firstDiff(want, got))
	}
	return nil
}

func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d\nwant %s\n got %s", i+1, w, g)
		}
	}
	return "identical lines, different bytes"
}
