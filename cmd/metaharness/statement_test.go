package main

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/metaharness/metaharness/internal/schemacheck"
	"github.com/metaharness/metaharness/provenance"
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
