package provenance

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/exit"
)

// keyPair writes a private key (mode 0600) and its public key as PEM and
// returns their paths.
func keyPair(t *testing.T, priv any) (key, pub string) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pder, err := x509.MarshalPKIXPublicKey(priv.(crypto.Signer).Public())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key, pub = filepath.Join(dir, "key.pem"), filepath.Join(dir, "key.pub")
	writeFile(t, key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	writeFile(t, pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pder}), 0o644)
	return key, pub
}

func writeFile(t *testing.T, path string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func ed25519Key(t *testing.T) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ecdsaKey(t *testing.T, c elliptic.Curve) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// records writes two files a run would have left and returns the
// statement about them.
func records(t *testing.T) (dir string, st Statement) {
	t.Helper()
	dir = t.TempDir()
	events, attestation := filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "attestation.json")
	writeFile(t, events, []byte(`{"format":"metaharness.event/1","seq":1}`+"\n"), 0o600)
	writeFile(t, attestation, []byte(`{"format":"metaharness.attestation/1"}`+"\n"), 0o600)
	for _, f := range []struct {
		role Role
		path string
	}{{RoleEvents, events}, {RoleAttestation, attestation}} {
		s, err := FileSubject(f.role, f.path)
		if err != nil {
			t.Fatal(err)
		}
		st.Subject = append(st.Subject, s)
	}
	st.Subject = append(st.Subject, UnkeptSubject(RoleTranscript, "scratch:transcript.jsonl", DigestOf([]byte("raw"))))
	st.Predicate = Predicate{Run: "claude-0123456789ab", Kind: "claude", Metaharness: "dev", ExitCode: 0}
	return dir, st
}

func seal(t *testing.T, dir string, st Statement, key string) string {
	t.Helper()
	var s *Signer
	if key != "" {
		var err error
		if s, err = LoadSigner(key); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Seal(st, s)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "statement.intoto.jsonl")
	writeFile(t, p, b, 0o600)
	return p
}

func verify(t *testing.T, file, pub string) (*Report, string) {
	t.Helper()
	v, err := LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(file, v)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Print(&b, v)
	return rep, b.String()
}

// TestSealAndVerify: a statement signed with either scheme verifies, one
// line per subject, and names its key in the predicate it signs.
func TestSealAndVerify(t *testing.T) {
	for name, priv := range map[string]any{"ed25519": ed25519Key(t), "p256": ecdsaKey(t, elliptic.P256())} {
		t.Run(name, func(t *testing.T) {
			key, pub := keyPair(t, priv)
			dir, st := records(t)
			file := seal(t, dir, st, key)
			rep, out := verify(t, file, pub)
			if rep.Code() != exit.OK {
				t.Fatalf("exit %d:\n%s", rep.Code(), out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 5 || !strings.HasPrefix(lines[0], "signature ok: ") || !strings.HasPrefix(lines[1], "ok ") ||
				!strings.HasPrefix(lines[3], "unkept ") || !strings.HasPrefix(lines[4], "statement verified: ") {
				t.Errorf("report:\n%s", out)
			}
			sg := rep.Sealed.Statement.Predicate.Signing
			if sg == nil || sg.KeyID != rep.Sealed.Envelope.Signatures[0].KeyID || sg.KeyID == "" {
				t.Errorf("the predicate names %+v, the signature %+v", sg, rep.Sealed.Envelope.Signatures)
			}
		})
	}
}

// TestVerifyFindsWhatChanged: a file changed or gone after the run, a
// payload altered, another key, an unsigned envelope: each exits 1 and the
// report names it; a record moved with its statement is still found, and
// every file of its name, at its place and beside the statement, must
// match (issue 33, finding 8).
func TestVerifyFindsWhatChanged(t *testing.T) {
	key, pub := keyPair(t, ed25519Key(t))
	dir, st := records(t)
	file := seal(t, dir, st, key)

	writeFile(t, st.Subject[0].Name, []byte("edited\n"), 0o600)
	if err := os.Remove(st.Subject[1].Name); err != nil {
		t.Fatal(err)
	}
	rep, out := verify(t, file, pub)
	if rep.Code() != exit.Gap || !strings.Contains(out, "\ndiffers    events ") || !strings.Contains(out, "\nmissing    attestation ") {
		t.Errorf("exit %d:\n%s", rep.Code(), out)
	}

	// Moved: the statement and its records in another directory.
	dir, st = records(t)
	file = seal(t, dir, st, key)
	moved := t.TempDir()
	for _, p := range []string{file, st.Subject[0].Name, st.Subject[1].Name} {
		if err := os.Rename(p, filepath.Join(moved, filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
	}
	if rep, out := verify(t, filepath.Join(moved, filepath.Base(file)), pub); rep.Code() != exit.OK || !strings.Contains(out, moved) {
		t.Errorf("moved: exit %d:\n%s", rep.Code(), out)
	}

	// Moved with one record forged beside it while the original still
	// stands: both are checked, and the forged one fails the statement,
	// named with the other beside it.
	dir, st = records(t)
	file = seal(t, dir, st, key)
	moved = t.TempDir()
	if err := os.Rename(file, filepath.Join(moved, filepath.Base(file))); err != nil {
		t.Fatal(err)
	}
	forgedEvents := filepath.Join(moved, filepath.Base(st.Subject[0].Name))
	writeFile(t, forgedEvents, []byte("forged\n"), 0o600)
	if rep, out := verify(t, filepath.Join(moved, filepath.Base(file)), pub); rep.Code() != exit.Gap ||
		!strings.Contains(out, "\ndiffers    events ") || !strings.Contains(out, forgedEvents+" is sha256:") ||
		!strings.Contains(out, st.Subject[0].Name+" was checked too") || !strings.Contains(out, "\nok         attestation ") {
		t.Errorf("a forged record beside a moved statement: exit %d:\n%s", rep.Code(), out)
	}
	// And the other way: the one beside holds, the one left at the old
	// place was changed.
	writeFile(t, forgedEvents, mustRead(t, st.Subject[0].Name), 0o600)
	writeFile(t, st.Subject[0].Name, []byte("changed after the move\n"), 0o600)
	if rep, out := verify(t, filepath.Join(moved, filepath.Base(file)), pub); rep.Code() != exit.Gap || !strings.Contains(out, st.Subject[0].Name+" is sha256:") {
		t.Errorf("a record changed at its old place: exit %d:\n%s", rep.Code(), out)
	}

	// The payload altered: the exit code made another.
	dir, st = records(t)
	file = seal(t, dir, st, key)
	b, _ := os.ReadFile(file)
	var env map[string]any
	_ = json.Unmarshal(b, &env)
	payload, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
	env["payload"] = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"exit_code":0`, `"exit_code":1`, 1)))
	forged, _ := json.Marshal(env)
	writeFile(t, file, forged, 0o600)
	if rep, out := verify(t, file, pub); rep.Code() != exit.Gap || !strings.HasPrefix(out, "signature bad: ") {
		t.Errorf("altered payload: exit %d:\n%s", rep.Code(), out)
	}

	// Another key.
	_, other := keyPair(t, ed25519Key(t))
	file = seal(t, dir, st, key)
	if rep, out := verify(t, file, other); rep.Code() != exit.Gap || !strings.HasPrefix(out, "signature bad: ") {
		t.Errorf("another key: exit %d:\n%s", rep.Code(), out)
	}

	// Unsigned.
	dir, st = records(t)
	file = seal(t, dir, st, "")
	rep, out = verify(t, file, pub)
	if rep.Code() != exit.Gap || !strings.HasPrefix(out, "signature none: ") || rep.Sealed.Statement.Predicate.Signing != nil {
		t.Errorf("unsigned: exit %d:\n%s", rep.Code(), out)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), `"signatures":[]`) {
		t.Errorf("an unsigned envelope should carry an empty signature list: %s", b)
	}
}

// TestKeyRefusals: every key --sign-key and --key refuse, by name.
func TestKeyRefusals(t *testing.T) {
	dir := t.TempDir()
	ed, edPub := keyPair(t, ed25519Key(t))
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPriv, rsaPub := keyPair(t, rsaKey)
	p384, p384Pub := keyPair(t, ecdsaKey(t, elliptic.P384()))
	open := filepath.Join(dir, "open.pem")
	b, _ := os.ReadFile(ed)
	writeFile(t, open, b, 0o640)
	garbage := filepath.Join(dir, "garbage.pem")
	writeFile(t, garbage, []byte("not a key\n"), 0o600)
	encrypted := filepath.Join(dir, "enc.pem")
	writeFile(t, encrypted, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1}}), 0o600)
	pubAsKey := filepath.Join(dir, "pub.pem")
	b, _ = os.ReadFile(edPub)
	writeFile(t, pubAsKey, b, 0o600)

	for _, c := range []struct {
		path string
		name exit.Name
		says string
	}{
		{filepath.Join(dir, "absent.pem"), RefuseSignKeyUnreadable, "cannot be opened"},
		{dir, RefuseSignKeyUnreadable, "a directory"},
		{open, RefuseSignKeyExposed, "mode 0640"},
		{garbage, RefuseSignKeyUnsupported, "holds no PEM block"},
		{encrypted, RefuseSignKeyUnsupported, "encrypted"},
		{pubAsKey, RefuseSignKeyUnsupported, "holds a public key"},
		{rsaPriv, RefuseSignKeyUnsupported, "RSA"},
		{p384, RefuseSignKeyUnsupported, "P-384"},
	} {
		_, err := LoadSigner(c.path)
		checkRefusal(t, "--sign-key "+filepath.Base(c.path), err, c.name, c.says)
	}
	for _, c := range []struct {
		path string
		name exit.Name
		says string
	}{
		{filepath.Join(dir, "absent.pub"), RefuseVerifyKeyUnreadable, "cannot be opened"},
		{ed, RefuseVerifyKeyUnsupported, `type "PRIVATE KEY"`},
		{garbage, RefuseVerifyKeyUnsupported, "holds no PEM block"},
		{rsaPub, RefuseVerifyKeyUnsupported, "RSA"},
		{p384Pub, RefuseVerifyKeyUnsupported, "P-384"},
	} {
		_, err := LoadVerifier(c.path)
		checkRefusal(t, "--key "+filepath.Base(c.path), err, c.name, c.says)
	}
}

func checkRefusal(t *testing.T, what string, err error, name exit.Name, says string) {
	t.Helper()
	var r *exit.Refusal
	if !errors.As(err, &r) || r.Name != name || !strings.Contains(r.Message, says) {
		t.Errorf("%s: %v, want %s saying %q", what, err, name, says)
	}
}

// TestOpenRefusals: what Verify refuses as no statement of a run.
func TestOpenRefusals(t *testing.T) {
	_, st := records(t)
	good, err := Seal(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload := func(s string) string {
		return `{"payloadType":"application/vnd.in-toto+json","payload":"` + base64.StdEncoding.EncodeToString([]byte(s)) + `","signatures":[]}`
	}
	for doc, says := range map[string]string{
		`[]`:                 "is not a DSSE envelope",
		`{"payload":"e30="}`: "lacks payloadType",
		`{"payloadType":"text/plain","payload":"e30="}`:                                                                                                  "not an in-toto statement",
		`{"payloadType":"application/vnd.in-toto+json","payload":"%%%"}`:                                                                                 "not base64",
		`{"payloadType":"application/vnd.in-toto+json","payloadType":"x","payload":"e30="}`:                                                              "twice",
		payload(`{"_type":"https://in-toto.io/Statement/v0.1"}`):                                                                                         "of type",
		payload(`{"_type":"https://in-toto.io/Statement/v1","predicateType":"https://slsa.dev/provenance/v1"}`):                                          "not a run's",
		payload(`{"_type":"https://in-toto.io/Statement/v1","predicateType":"` + PredicateType + `","subject":[]}`):                                      "no subject",
		payload(`{"_type":"https://in-toto.io/Statement/v1","predicateType":"` + PredicateType + `","subject":[{"name":"x","digest":{"sha256":"ab"}}]}`): "64 hex digits",
		payload(`{"_type":"https://in-toto.io/Statement/v1","_type":"https://in-toto.io/Statement/v1"}`):                                                 "twice",
	} {
		if _, err := Open([]byte(doc)); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want %q", doc, err, says)
		}
	}
	if _, err := Open(good); err != nil {
		t.Errorf("a sealed statement does not open: %v", err)
	}
	// URL-safe base64 is DSSE's too.
	var env map[string]any
	_ = json.Unmarshal(good, &env)
	raw, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
	env["payload"] = base64.URLEncoding.EncodeToString(raw)
	b, _ := json.Marshal(env)
	if _, err := Open(b); err != nil {
		t.Errorf("URL-safe base64: %v", err)
	}
	dir := t.TempDir()
	_, pub := keyPair(t, ed25519Key(t))
	v, _ := LoadVerifier(pub)
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, []byte(`{}`), 0o600)
	_, err = Verify(bad, v)
	checkRefusal(t, "--verify bad.json", err, RefuseStatementMalformed, "lacks payloadType")
	_, err = Verify(filepath.Join(dir, "absent"), v)
	checkRefusal(t, "--verify absent", err, RefuseStatementUnreadable, "cannot be opened")
}

// FuzzOpen: no envelope makes Open panic, and one it accepts re-encodes to
// a statement it accepts again.
func FuzzOpen(f *testing.F) {
	st := Statement{Subject: []Subject{UnkeptSubject(RoleEvents, "stdout:events", DigestOf(nil))}, Predicate: Predicate{Run: "claude-1"}}
	good, _ := Seal(st, nil)
	f.Add(good)
	f.Add([]byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"","sig":"AA=="}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Open(b)
		if err != nil {
			return
		}
		again, err := Seal(s.Statement, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Open(again); err != nil {
			t.Fatalf("re-sealed statement does not open: %v", err)
		}
	})
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
