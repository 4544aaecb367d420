package main

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/provenance"
	"github.com/metaharness/metaharness/testkit/schemacheck"
	"github.com/metaharness/metaharness/testkit/vendortest"
)

// readScript is the stand-in claude's script for statementRun: one read
// through the catalogue, then the answer.
const readScript = "init\ntool c1 mcp__metaharness__read_file {\"path\":\"notes.md\"}\nresult DONE\n"

// statementRun runs the stand-in claude (testkit/fakevendor, this test
// binary) playing script, with a --statement and args, under a sealed
// frame and a catalogue, a git-tracked --context file in its cwd; it
// returns the operator, the statement's path and the exit code.
func statementRun(t *testing.T, script string, args ...string) (*operator, string, int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := newOperatorFor(t, "", "claude", self)
	o.write("notes.md", "the release is on Friday\n")
	task := o.write("task.script", script)
	o.git("init", "-q")
	o.git("add", "notes.md")
	cat := filepath.Join(o.home, "tools.yaml")
	if err := os.WriteFile(cat, []byte(readCatalogue), 0o644); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(t.TempDir(), "run.intoto.jsonl")
	res := o.run(nil, append([]string{"--credentials", "none", "--cwd", o.tree, "--scratch-cwd", "--context", "notes.md",
		"--frame", o.sealFrame("file.read"), "--catalogue", cat, "--statement", st}, append(args, "-p", task)...)...)
	return o, st, res.code
}

// TestRunStatementsPassTheSchema: statements runs wrote pass
// schemas/run-statement.schema.json: a signed one of a run that read
// through the catalogue under a frame with a context file, and an unsigned
// one of a run whose child died without a terminal record (exit 3, its
// reason given).
func TestRunStatementsPassTheSchema(t *testing.T) {
	key, _ := writeKeyPair(t, t.TempDir(), ed25519Key(t))
	for name, c := range map[string]struct {
		script string
		args   []string
		exit   int
	}{
		"signed, exit 0":   {readScript, []string{"--sign-key", key}, 0},
		"unsigned, exit 3": {"init\nexit 7\n", nil, 3},
	} {
		t.Run(name, func(t *testing.T) {
			_, st, code := statementRun(t, c.script, c.args...)
			if code != c.exit {
				t.Fatalf("exit %d, want %d", code, c.exit)
			}
			b, err := os.ReadFile(st)
			if err != nil {
				t.Fatal(err)
			}
			if err := schemacheck.Statement(b); err != nil {
				t.Errorf("%v\n%s", err, b)
			}
			sealed, err := provenance.Open(b)
			if err != nil {
				t.Fatal(err)
			}
			roles := map[provenance.Role]bool{}
			for _, s := range sealed.Statement.Subject {
				roles[s.Annotations.Role] = true
			}
			for _, r := range []provenance.Role{provenance.RoleEvents, provenance.RoleFrame, provenance.RoleCatalogue, provenance.RoleContext} {
				if !roles[r] {
					t.Errorf("no %s subject: %v", r, roles)
				}
			}
		})
	}
}

// TestSecuresystemslibVerifiesRunStatements: an implementation that is not
// ours, Python's securesystemslib (provenance/testdata/
// verify_securesystemslib.py), verifies the statements runs signed with an
// ed25519 and an ECDSA P-256 key, computes the key id the envelope names,
// and rejects the envelope once its payload is changed. It counts among
// the real-client tests: without the package it skips, and under
// METAHARNESS_REQUIRE_REAL_CLIENTS=1 (CI) it fails.
func TestSecuresystemslibVerifiesRunStatements(t *testing.T) {
	vendortest.Record(t)
	python := securesystemslibPython(t)
	script, err := filepath.Abs(filepath.Join("..", "..", "provenance", "testdata", "verify_securesystemslib.py"))
	if err != nil {
		t.Fatal(err)
	}
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		scheme string
		priv   crypto.Signer
	}{{provenance.SchemeEd25519, ed25519Key(t)}, {provenance.SchemeECDSAP256, p256}} {
		t.Run(c.scheme, func(t *testing.T) {
			key, pub := writeKeyPair(t, t.TempDir(), c.priv)
			_, st, code := statementRun(t, readScript, "--sign-key", key)
			if code != 0 {
				t.Fatalf("the run exited %d", code)
			}
			b, err := os.ReadFile(st)
			if err != nil {
				t.Fatal(err)
			}
			sealed, err := provenance.Open(b)
			if err != nil {
				t.Fatal(err)
			}
			keyID := sealed.Envelope.Signatures[0].KeyID
			if sg := sealed.Statement.Predicate.Signing; sg == nil || sg.KeyID != keyID || sg.Scheme != c.scheme {
				t.Fatalf("the predicate names the key %+v, the envelope %s", sg, keyID)
			}

			out, code := pythonVerify(t, python, script, st, pub)
			if want := fmt.Sprintf(": signature ok: %s key %s, predicate %s, %d subjects", c.scheme, keyID, provenance.PredicateType, len(sealed.Statement.Subject)); code != 0 || !strings.Contains(out, want) {
				t.Errorf("securesystemslib: exit %d, want 0 and %q:\n%s", code, want, out)
			}

			// The same envelope, its payload saying the run failed.
			payload, _ := base64.StdEncoding.DecodeString(sealed.Envelope.Payload)
			changed := bytes.Replace(payload, []byte(`"exit_code":0,`), []byte(`"exit_code":1,`), 1)
			if bytes.Equal(changed, payload) {
				t.Fatalf("the payload says no exit code 0:\n%s", payload)
			}
			env := sealed.Envelope
			env.Payload = base64.StdEncoding.EncodeToString(changed)
			tb, _ := json.Marshal(env)
			tampered := filepath.Join(filepath.Dir(st), "tampered.intoto.jsonl")
			if err := os.WriteFile(tampered, tb, 0o600); err != nil {
				t.Fatal(err)
			}
			out, code = pythonVerify(t, python, script, tampered, pub)
			if want := ": signature rejected: " + c.scheme + " key " + keyID; code != 1 || !strings.Contains(out, want) {
				t.Errorf("securesystemslib on the changed payload: exit %d, want 1 and %q:\n%s", code, want, out)
			}
		})
	}
}

// securesystemslibPython is a python3 that imports securesystemslib and
// cryptography: the one on PATH, else Debian's /usr/bin/python3, where
// apt-get installs python3-securesystemslib (a pyenv or virtualenv
// python3 first on PATH does not see it).
func securesystemslibPython(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, name := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(name)
		if err != nil {
			tried = append(tried, name+" not found")
			continue
		}
		out, err := exec.Command(path, "-c", "import securesystemslib, cryptography").CombinedOutput()
		if err == nil {
			return path
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		tried = append(tried, path+": "+lines[len(lines)-1])
	}
	vendortest.Unavailable(t, "no python3 imports securesystemslib and cryptography (%s): apt-get install python3-securesystemslib python3-cryptography", strings.Join(tried, "; "))
	return ""
}

// pythonVerify runs the script on an envelope and a public key and
// returns its output and exit code.
func pythonVerify(t *testing.T, python, script, envelope, pub string) (string, int) {
	t.Helper()
	out, err := exec.Command(python, script, envelope, pub).CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("%s %s: %v", python, script, err)
	}
	t.Logf("securesystemslib on %s:\n%s", filepath.Base(envelope), out)
	return string(out), exitCodeOf(err)
}

func exitCodeOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return 0
}

func ed25519Key(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// writeKeyPair writes priv into dir as PEM, the private key (PKCS #8)
// 0600, and its public key.
func writeKeyPair(t *testing.T, dir string, priv crypto.Signer) (key, pub string) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pder, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	key, pub = filepath.Join(dir, "sign.pem"), filepath.Join(dir, "sign.pub")
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pder}), 0o644); err != nil {
		t.Fatal(err)
	}
	return key, pub
}
