package gemini

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
)

// readAll maps lines, then the end, to their events.
func readAll(lines ...string) ([]kind.Item, *Reader) {
	var r Reader
	var items []kind.Item
	for _, l := range lines {
		items = append(items, r.Read([]byte(l))...)
	}
	return append(items, r.End()...), &r
}

// TestReaderJoinsDeltas: the assistant's deltas are one text, recorded at
// the first delta's time when another record arrives or the stream ends;
// the final answer is the text after the last tool result.
func TestReaderJoinsDeltas(t *testing.T) {
	items, r := readAll(
		`{"type":"init","timestamp":"t0","session_id":"s","model":"gemini-2.5-flash"}`,
		`{"type":"message","timestamp":"t1","role":"user","content":"go"}`,
		`{"type":"message","timestamp":"t2","role":"assistant","content":"Let me ","delta":true}`,
		`{"type":"message","timestamp":"t3","role":"assistant","content":"look.","delta":true}`,
		`{"type":"tool_use","timestamp":"t4","tool_name":"read_file","tool_id":"read_file__1","parameters":{"file_path":"a"}}`,
		`{"type":"tool_result","timestamp":"t5","tool_id":"read_file__1","status":"success","output":"hi"}`,
		`{"type":"message","timestamp":"t6","role":"assistant","content":"DO","delta":true}`,
		`{"type":"message","timestamp":"t7","role":"assistant","content":"NE","delta":true}`,
		`{"type":"result","timestamp":"t8","status":"success","stats":{"input_tokens":3,"output_tokens":4,"cached":1,"duration_ms":9,"models":{"gemini-2.5-flash":{"input_tokens":3,"output_tokens":4,"cached":1}}}}`,
	)
	var got []string
	for _, it := range items {
		switch e := it.Event.(type) {
		case *record.SessionStarted:
			got = append(got, "started "+*e.SessionID+" "+*e.Model)
		case *record.Opaque:
			got = append(got, "opaque "+*e.VendorType+"/"+*e.VendorSubtype)
		case *record.Text:
			got = append(got, "text "+it.At+" "+e.Text)
		case *record.ToolRequested:
			got = append(got, "call "+e.CallID+" "+e.Name+" "+string(e.Input)+" "+e.Seam)
		case *record.ToolResult:
			got = append(got, "result "+e.CallID+" "+string(e.Content))
		case *record.SessionEnded:
			got = append(got, "ended "+e.FinalAnswer.Text)
		}
	}
	want := []string{
		"started s gemini-2.5-flash",
		"opaque message/user",
		"text t2 Let me look.",
		`call read_file__1 read_file {"file_path":"a"} ` + record.SeamHook,
		`result read_file__1 "hi"`,
		"text t6 DONE",
		"ended DONE",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	e := r.Terminal()
	if e == nil || *e.IsError || *e.Usage.InputTokens != 3 || *e.Usage.CacheReadInputTokens != 1 || *e.ModelUsage["gemini-2.5-flash"].OutputTokens != 4 || *e.DurationMS != 9 {
		t.Errorf("terminal %+v", e)
	}
	if CloseReason(e) != record.ReasonCompleted {
		t.Error("a success closes as an error")
	}
	// A text still held when the stream ends is recorded then.
	items, _ = readAll(`{"type":"message","timestamp":"t","role":"assistant","content":"cut off","delta":true}`)
	if len(items) != 1 || items[0].Event.(*record.Text).Text != "cut off" {
		t.Errorf("a text at the end: %+v", items)
	}
}

// TestReaderErrors: an error result is an error with its type, the API
// status its message names and no final answer; error lines are warnings
// by severity; an owned tool is decided at its own seam.
func TestReaderErrors(t *testing.T) {
	items, r := readAll(
		`{"type":"message","timestamp":"t","role":"assistant","content":"half","delta":true}`,
		`{"type":"error","timestamp":"t","severity":"warning","message":"Loop detected"}`,
		`{"type":"error","timestamp":"t","severity":"error","message":"Invalid stream"}`,
		`{"type":"tool_use","timestamp":"t","tool_name":"mcp_metaharness_fs_read","tool_id":"x__1","parameters":{}}`,
		`{"type":"tool_result","timestamp":"t","tool_id":"x__1","status":"error","error":{"type":"policy_violation","message":"denied: not in the frame"}}`,
		`{"type":"result","timestamp":"t","status":"error","error":{"type":"FatalAuthenticationError","message":"[API Error: {\"error\":{\"code\":401,\"message\":\"bad key\"}}]"}}`,
	)
	var codes []string
	for _, it := range items {
		switch e := it.Event.(type) {
		case *record.Warning:
			codes = append(codes, e.Code+": "+e.Message)
		case *record.ToolRequested:
			if e.Seam != record.SeamOwnedTool {
				t.Errorf("an owned tool's seam: %s", e.Seam)
			}
		case *record.ToolResult:
			if !*e.IsError || string(e.Content) != `"denied: not in the frame"` {
				t.Errorf("an error result: %+v %s", e, e.Content)
			}
		}
	}
	if want := []string{WarnVendorWarning + ": Gemini CLI: Loop detected", WarnVendorError + ": Gemini CLI: Invalid stream"}; strings.Join(codes, "|") != strings.Join(want, "|") {
		t.Errorf("warnings %q", codes)
	}
	e := r.Terminal()
	if e == nil || !*e.IsError || *e.TerminalReason != "FatalAuthenticationError" || e.APIErrorStatus == nil || *e.APIErrorStatus != 401 || e.FinalAnswer != nil {
		t.Errorf("terminal %+v", e)
	}
	if CloseReason(e) != record.ReasonError || CloseReason(nil) != record.ReasonError {
		t.Error("an error or no terminal record closes as completed")
	}
}

// TestReaderReadsKeysAsTheVendorDoes: a record giving a key twice or in
// another case is one Gemini CLI's reader and encoding/json read two ways;
// nothing is taken from it as the model's, and it stays opaque.
func TestReaderReadsKeysAsTheVendorDoes(t *testing.T) {
	for _, line := range []string{
		`{"type":"tool_use","timestamp":"t","tool_name":"read_file","tool_name":"run_shell_command","tool_id":"a","parameters":{}}`,
		`{"type":"tool_use","timestamp":"t","tool_name":"read_file","Tool_Name":"x","tool_id":"a","parameters":{}}`,
		`{"type":"tool_use","timestamp":"t","tool_name":"read_file","tool_id":"a","parameters":{"f":1,"f":2}}`,
		`{"type":"init","type":"result","status":"success"}`,
		`{"type":"message","role":"assistant","content":"a","content":"b","delta":true}`,
		`[1]`,
		`not json`,
	} {
		items, _ := readAll(line)
		if len(items) != 1 {
			t.Errorf("%s: %d events", line, len(items))
			continue
		}
		if _, ok := items[0].Event.(*record.Opaque); !ok {
			t.Errorf("%s: %T, want opaque", line, items[0].Event)
		}
	}
}

// FuzzReader: no vendor line makes the reader panic, every non-blank line
// yields at least one event once the stream ends (nothing is dropped),
// and every event encodes.
func FuzzReader(f *testing.F) {
	ins, _ := filepath.Glob("../../conformance/testdata/c2/gemini/*.in.jsonl")
	for _, p := range ins {
		if b, err := os.ReadFile(p); err == nil {
			for _, l := range bytes.Split(b, []byte("\n")) {
				f.Add(l)
			}
		}
	}
	f.Add([]byte(`{"type":"result","status":"error","error":{"type":"x","message":"{\"code\":429}"}}`))
	f.Add([]byte(`{"type":"message","role":"assistant","content":"","delta":true}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var r Reader
		items := append(r.Read(line), r.End()...)
		if len(bytes.TrimSpace(bytes.TrimRight(line, "\r\n"))) > 0 && len(items) == 0 && !emptyDelta(line) {
			t.Fatalf("line dropped: %q", line)
		}
		for _, it := range items {
			if _, err := record.EncodeEvent(1, "r", nil, it.Event); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
		}
	})
}

// emptyDelta: an assistant delta with no text adds nothing to record.
func emptyDelta(line []byte) bool {
	var v struct {
		Content *string `json:"content"`
	}
	return json.Unmarshal(line, &v) == nil && v.Content != nil && *v.Content == ""
}
