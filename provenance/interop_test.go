package provenance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/secure-systems-lab/go-securesystemslib/signerverifier"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestOthersVerifyIt: a statement sealed with keys OpenSSL made verifies
// with implementations that are not ours: the in-toto attestation
// framework's Go types read and validate the statement, go-securesystemslib
// verifies the envelope with the public key as its own loader reads it, and
// OpenSSL verifies each signature over DSSE's pre-authentication encoding,
// which the test spells from the DSSE protocol.
func TestOthersVerifyIt(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed; the cross-check needs it")
	}
	for _, c := range []struct {
		name   string
		genkey []string
	}{
		{"ed25519", []string{"genpkey", "-algorithm", "ed25519"}},
		{"p256-pkcs8", []string{"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"}},
		{"p256-sec1", []string{"ecparam", "-name", "prime256v1", "-genkey", "-noout"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			key, pub := filepath.Join(dir, "key.pem"), filepath.Join(dir, "key.pub")
			openssl(t, append(c.genkey, "-out", key)...)
			if err := os.Chmod(key, 0o600); err != nil {
				t.Fatal(err)
			}
			openssl(t, "pkey", "-in", key, "-pubout", "-out", pub)
			rdir, st := records(t)
			file := seal(t, rdir, st, key)
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}

			var env dsse.Envelope
			if err := json.Unmarshal(b, &env); err != nil {
				t.Fatal(err)
			}
			payload, err := env.DecodeB64Payload()
			if err != nil {
				t.Fatal(err)
			}

			// in-toto's Go types.
			var s intoto.Statement
			if err := protojson.Unmarshal(payload, &s); err != nil {
				t.Fatalf("in-toto's types do not read the statement: %v\n%s", err, payload)
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("in-toto's types find the statement invalid: %v", err)
			}
			if s.GetPredicateType() != PredicateType || len(s.GetSubject()) != len(st.Subject) {
				t.Errorf("in-toto reads predicate %q and %d subjects", s.GetPredicateType(), len(s.GetSubject()))
			}
			for i, sub := range s.GetSubject() {
				if sub.GetName() != st.Subject[i].Name || sub.GetDigest()["sha256"] != st.Subject[i].Digest["sha256"] {
					t.Errorf("in-toto reads subject %d as %s %v", i, sub.GetName(), sub.GetDigest())
				}
			}
			if got := s.GetPredicate().GetFields()["run"].GetStringValue(); got != st.Predicate.Run {
				t.Errorf("in-toto reads the predicate's run as %q", got)
			}

			// go-securesystemslib's verifier, with the key as it loads it.
			pubPEM, _ := os.ReadFile(pub)
			sk, err := signerverifier.LoadKey(pubPEM)
			if err != nil {
				t.Fatal(err)
			}
			var v dsse.Verifier
			if sk.KeyType == signerverifier.ED25519KeyType {
				v, err = signerverifier.NewED25519SignerVerifierFromSSLibKey(sk)
			} else {
				v, err = signerverifier.NewECDSASignerVerifierFromSSLibKey(sk)
			}
			if err != nil {
				t.Fatal(err)
			}
			ev, err := dsse.NewEnvelopeVerifier(v)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ev.Verify(context.Background(), &env); err != nil {
				t.Errorf("go-securesystemslib does not verify the envelope: %v", err)
			}

			// OpenSSL, over PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body.
			pae := fmt.Appendf(nil, "DSSEv1 %d %s %d ", len(env.PayloadType), env.PayloadType, len(payload))
			pae = append(pae, payload...)
			paeFile, sigFile := filepath.Join(dir, "pae"), filepath.Join(dir, "sig")
			sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, paeFile, pae, 0o600)
			writeFile(t, sigFile, sig, 0o600)
			if c.name == "ed25519" {
				openssl(t, "pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin", "-in", paeFile, "-sigfile", sigFile)
			} else {
				openssl(t, "dgst", "-sha256", "-verify", pub, "-signature", sigFile, paeFile)
			}

			// And ours agrees.
			if rep, out := verify(t, file, pub); !rep.Holds() {
				t.Errorf("audit --verify does not hold:\n%s", out)
			}
		})
	}
}

func openssl(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("openssl", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("openssl %v: %v\n%s", args, err, out.String())
	}
}
