package actions

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// vector is one line of testdata/parsers.jsonl: a parser's input and what
// it must give (good_*: Want) or refuse (fail_*: Code and Message).
type vector struct {
	Name    string          `json:"name"`
	Parser  string          `json:"parser"`
	Input   string          `json:"input"`
	Want    json.RawMessage `json:"want"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Minimum int64           `json:"minimum"`
}

func vectors(t testing.TB) []vector {
	t.Helper()
	f, err := os.Open("testdata/parsers.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vector
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// parse runs the parser a vector names; what it gives is returned as the
// JSON the vector's want is written in.
func parse(parser, input string, minimum int64) (any, error) {
	switch parser {
	case "required":
		return RequiredEnvironmentValue(map[string]string{"HARNESS_X": input}, "HARNESS_X")
	case "integer":
		n, ok, err := ParseInteger(input, "HARNESS_N", minimum)
		if !ok {
			return nil, err
		}
		return n, err
	case "labels":
		return ParseRequiredLabels(input, "")
	case "concurrency":
		return ParseConcurrencyID(input, ConcurrencyOptions{})
	case "concurrency_optional":
		return ParseConcurrencyID(input, ConcurrencyOptions{Optional: true})
	case "concurrency_any":
		return ParseConcurrencyID(input, ConcurrencyOptions{AllowAnyCharacters: true})
	case "metadata":
		m, err := ParseMetadata(input, "")
		return string(m), err // the bytes as sent
	case "origin":
		return ParseAPIOrigin(input, OriginOptions{})
	case "origin_http":
		return ParseAPIOrigin(input, OriginOptions{AllowHTTP: true})
	case "harness_origin":
		return ParseHarnessAPIOrigin(map[string]string{"HARNESS_URL": input})
	case "target":
		return ParseHarnessTarget(input, "")
	case "fallbacks":
		return ParseHarnessFallbacks(input, "")
	}
	panic("no parser " + parser)
}

// TestParsers: every vector of testdata/parsers.jsonl, and each parser met
// by at least one good and one fail vector.
func TestParsers(t *testing.T) {
	met := map[string]bool{}
	for _, v := range vectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			got, err := parse(v.Parser, v.Input, v.Minimum)
			good := strings.HasPrefix(v.Name, "good_")
			met[v.Parser+map[bool]string{true: " good", false: " fail"}[good]] = true
			if !good {
				var de *DispatchError
				if !errors.As(err, &de) || de.Code != v.Code || de.Message != v.Message || err.Error() != v.Message {
					t.Fatalf("gave %v (%#v), want %s %q", got, err, v.Code, v.Message)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			b, _ := json.Marshal(got)
			var gotV, wantV any
			json.Unmarshal(b, &gotV)
			json.Unmarshal(v.Want, &wantV)
			if !reflect.DeepEqual(gotV, wantV) {
				t.Errorf("gave %s, want %s", b, v.Want)
			}
		})
	}
	for _, p := range []string{"required", "integer", "labels", "concurrency", "concurrency_any", "metadata", "origin", "origin_http", "harness_origin", "target", "fallbacks"} {
		if !met[p+" good"] || !met[p+" fail"] {
			t.Errorf("parser %s lacks a good or a fail vector", p)
		}
	}
}

func TestFieldNames(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(ParseRequiredLabels("[", "INPUT_LABELS")), "INPUT_LABELS must be valid JSON"},
		{second(ParseConcurrencyID("", ConcurrencyOptions{FieldName: "INPUT_CONCURRENCY"})), "INPUT_CONCURRENCY is required"},
		{second(ParseMetadata("[]", "INPUT_METADATA")), "INPUT_METADATA must be a JSON object"},
		{second(ParseAPIOrigin("http://h", OriginOptions{FieldName: "INPUT_URL"})), "INPUT_URL must use https"},
		{second(ParseHarnessTarget("{}", "INPUT_TARGET")), "INPUT_TARGET must be exactly one of providerId, providerName, commandId, or commandName"},
		{second(ParseHarnessFallbacks("[{}]", "INPUT_FALLBACKS")), "INPUT_FALLBACKS[0] must be exactly one of providerId, providerName, commandId, or commandName"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("%v, want %q", c.err, c.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestTargetSpecKeys(t *testing.T) {
	if got := strings.Join(TargetSpecKeys[:], ","); got != "providerId,providerName,commandId,commandName" {
		t.Errorf("TargetSpecKeys %s", got)
	}
}

func TestIsHarnessDrainOperation(t *testing.T) {
	for op, want := range map[string]bool{
		"start-drain": true, "get-drain": true, "wait-for-drain": true, "release-drain": true,
		"dispatch": false, "": false, "Start-Drain": false, " start-drain": false, "drain": false,
	} {
		if got := IsHarnessDrainOperation(op); got != want {
			t.Errorf("IsHarnessDrainOperation(%q) = %v", op, got)
		}
	}
}

func TestJSNumber(t *testing.T) {
	for f, want := range map[float64]string{
		1: "1", -1: "-1", 0.5: "0.5", 1e21: "1e+21", 1e20: "100000000000000000000", 123.456: "123.456",
		1e-6: "0.000001", 1e-7: "1e-7", 1.5e-7: "1.5e-7", -2.5e30: "-2.5e+30", 5e-324: "5e-324",
		1.7976931348623157e308: "1.7976931348623157e+308", 0.1: "0.1", 100: "100", 12345678.9: "12345678.9",
	} {
		if got := jsNumber(f); got != want {
			t.Errorf("jsNumber(%v) = %s, want %s", f, got, want)
		}
	}
}
