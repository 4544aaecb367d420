package loopback

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/conformance/scripted"
)

// curl runs curl through the proxy with a clean environment (no proxy
// variables of ours) and returns its exit code, stdout and stderr.
func curl(t *testing.T, p *Proxy, args ...string) (int, string, string) {
	t.Helper()
	bin, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("METAHARNESS_REQUIRE_REAL_CLIENTS") == "1" {
			t.Fatal("curl is not installed; .ci/run installs it")
		}
		t.Skip("curl is not installed")
	}
	cmd := exec.Command(bin, append([]string{"-sS", "--max-time", "20", "-x", p.GateURL()}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// TestEgressGateWithCurl: CONNECT and absolute-URL requests to hosts off
// the allowlist are refused 403 and recorded, with no dial and no DNS
// lookup; allowlisted hosts pass, both ways, and are recorded with bytes.
func TestEgressGateWithCurl(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "plain ok") }))
	defer plain.Close()
	tlsUp := scripted.NewOpenAIServer(scripted.Texts("through the tunnel"), scripted.WithTLS())
	defer tlsUp.Close()
	plainHost := strings.TrimPrefix(plain.URL, "http://")
	tlsHost := strings.TrimPrefix(tlsUp.URL(), "https://")
	p := start(t, "https://api.anthropic.com", func(c *Config) { c.AllowEgress = []string{plainHost, tlsHost} })

	// Refused: CONNECT to an unlisted host.
	code, _, stderr := curl(t, p, "https://example.com/")
	if code == 0 || !strings.Contains(stderr, "403") {
		t.Fatalf("CONNECT example.com: curl exit %d, stderr %s", code, stderr)
	}
	// Refused: absolute URL to an unlisted host.
	code, out, _ := curl(t, p, "-w", "%{http_code}", "http://example.com/x")
	if code != 0 || !strings.HasSuffix(out, "403") || !strings.Contains(out, "egress to example.com refused") {
		t.Fatalf("GET http://example.com: curl exit %d, out %s", code, out)
	}
	// Refused: a listed host on another port.
	other := strings.Split(plainHost, ":")[0] + ":1"
	code, out, _ = curl(t, p, "-w", "%{http_code}", "http://"+other+"/")
	if code != 0 || !strings.HasSuffix(out, "403") {
		t.Fatalf("GET %s: curl exit %d, out %s", other, code, out)
	}

	// Allowed: plain http to a listed loopback host.
	code, out, stderr = curl(t, p, "http://"+plainHost+"/hello")
	if code != 0 || out != "plain ok" {
		t.Fatalf("GET %s: curl exit %d, out %q, stderr %s", plainHost, code, out, stderr)
	}
	// Allowed: a CONNECT tunnel to a listed https host, verified end to end.
	ca := filepath.Join(t.TempDir(), "ca.pem")
	writeCert(t, tlsUp, ca)
	code, out, stderr = curl(t, p, "--cacert", ca, "-d", `{"stream":true}`, tlsUp.URL()+"/v1/responses")
	if code != 0 || !strings.Contains(out, "through the tunnel") {
		t.Fatalf("CONNECT %s: curl exit %d, out %q, stderr %s", tlsHost, code, out, stderr)
	}
	_ = p.Close() // closes the tunnel's record

	recs := p.Records()
	if len(recs) != 5 {
		js, _ := json.MarshalIndent(recs, "", " ")
		t.Fatalf("%d records, want 5:\n%s", len(recs), js)
	}
	want := []struct {
		route   Route
		path    string
		refused string
		status  int
	}{
		{RouteConnect, "example.com:443", RefusedEgress, 403},
		{RouteForward, "example.com/x", RefusedEgress, 403},
		{RouteForward, other + "/", RefusedEgress, 403},
		{RouteForward, plainHost + "/hello", "", 200},
		{RouteConnect, tlsHost, "", 200},
	}
	for i, w := range want {
		r := recs[i]
		if r.Route != w.route || r.Path != w.path || r.Refused != w.refused || r.Status != w.status {
			t.Errorf("record %d: %+v, want %+v", i, r, w)
		}
	}
	if recs[3].BytesOut != int64(len("plain ok")) || recs[4].BytesIn == 0 || recs[4].BytesOut == 0 {
		t.Errorf("byte counts: forward %+v tunnel %+v", recs[3], recs[4])
	}
	if c := p.Counters(); c.RefusedEgress != 3 || c.EgressAllowed != 2 || c.Forwarded != 0 {
		t.Errorf("counters %+v", c)
	}
}

// TestEgressPlainHTTPOffLoopback: an allowlisted host that is not loopback
// is still refused over plain http (the child must use CONNECT and TLS).
func TestEgressPlainHTTPOffLoopback(t *testing.T) {
	p := start(t, "https://api.anthropic.com", func(c *Config) { c.AllowEgress = []string{"example.com"} })
	code, out, _ := curl(t, p, "-w", "%{http_code}", "http://example.com/")
	if code != 0 || !strings.HasSuffix(out, "403") || !strings.Contains(out, "plain http off loopback") {
		t.Fatalf("curl exit %d out %s", code, out)
	}
	_ = p.Close()
	if r := p.Records()[0]; r.Refused != RefusedEgressPlainHTTP {
		t.Fatalf("record %+v", r)
	}
}

func writeCert(t *testing.T, s *scripted.Server, path string) {
	t.Helper()
	if err := os.WriteFile(path, s.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
}
