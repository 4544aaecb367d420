package provenance

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/secure-systems-lab/go-securesystemslib/signerverifier"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/inputfile"
)

// Refusal names of the statement, its key and its verification (exit 2).
const (
	RefuseStatementFile           exit.Name = "statement-file"
	RefuseSignKeyUnreadable       exit.Name = "sign-key-unreadable"
	RefuseSignKeyExposed          exit.Name = "sign-key-exposed"
	RefuseSignKeyUnsupported      exit.Name = "sign-key-unsupported"
	RefuseSignKeyWithoutStatement exit.Name = "sign-key-without-statement"
	RefuseVerifyKeyMissing        exit.Name = "verify-key-missing"
	RefuseVerifyKeyUnreadable     exit.Name = "verify-key-unreadable"
	RefuseVerifyKeyUnsupported    exit.Name = "verify-key-unsupported"
	RefuseStatementUnreadable     exit.Name = "statement-unreadable"
	RefuseStatementMalformed      exit.Name = "statement-malformed"
)

// The two signature schemes, in securesystemslib's words.
const (
	SchemeEd25519   = "ed25519"
	SchemeECDSAP256 = "ecdsa-sha2-nistp256"
)

// maxKeyFile bounds a PEM key file; a key is a few hundred bytes.
const maxKeyFile = 64 << 10

// Signer signs a statement's envelope with one key.
type Signer struct {
	sv      dsse.SignerVerifier
	signing Signing
}

// Signing names the key, for the predicate.
func (s *Signer) Signing() Signing { return s.signing }

// LoadSigner reads a private key (PEM: PKCS #8, or SEC 1 for ECDSA) from
// path for --sign-key: ed25519 or ECDSA P-256, in a regular file no one
// but its owner may read (mode 0600 or stricter, as a token file).
func LoadSigner(path string) (*Signer, error) {
	f, fi, err := inputfile.Open(path)
	if err != nil {
		return nil, exit.Within(RefuseSignKeyUnreadable, err, "--sign-key %v; name the PEM file of an ed25519 or ECDSA P-256 private key", err)
	}
	defer f.Close()
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, exit.Refuse(RefuseSignKeyExposed, "--sign-key %s has mode %04o, so its group or others may read the private key; chmod 600 it (and consider the key spent)", path, perm)
	}
	pemBytes, err := inputfile.ReadFrom(f, path, maxKeyFile)
	if err != nil {
		return nil, exit.Within(RefuseSignKeyUnreadable, err, "--sign-key %v; name the PEM file of an ed25519 or ECDSA P-256 private key", err)
	}
	key, err := privateKey(pemBytes)
	if err == nil {
		var sv dsse.SignerVerifier
		var signing Signing
		if sv, signing, err = signerVerifier(pemBytes, key); err == nil {
			return &Signer{sv: sv, signing: signing}, nil
		}
	}
	return nil, exit.Within(RefuseSignKeyUnsupported, err, "--sign-key %s %v", path, err)
}

// privateKey is the one private key pemBytes holds, refused unless it is
// one a run signs with.
func privateKey(pemBytes []byte) (any, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil {
		return nil, errors.New("holds no PEM block; give an ed25519 or ECDSA P-256 private key in PEM (openssl genpkey -algorithm ed25519)")
	}
	switch b.Type {
	case "ENCRYPTED PRIVATE KEY":
		return nil, errors.New("holds an encrypted private key, which a run cannot unlock unattended; give it unencrypted, mode 0600")
	case "PUBLIC KEY":
		return nil, errors.New("holds a public key; --sign-key takes the private key (audit --verify --key takes the public one)")
	}
	var key any
	var err error
	switch b.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		return nil, fmt.Errorf("holds a PEM block of type %q; give a PKCS #8 \"PRIVATE KEY\" (or SEC 1 \"EC PRIVATE KEY\")", b.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("holds a %s block that does not parse (%v)", b.Type, err)
	}
	return key, supported(key)
}

// supported refuses a key of another algorithm or curve.
func supported(key any) error {
	switch k := key.(type) {
	case ed25519.PrivateKey, ed25519.PublicKey:
		return nil
	case *ecdsa.PrivateKey:
		return p256(k.Curve)
	case *ecdsa.PublicKey:
		return p256(k.Curve)
	case *rsa.PrivateKey, *rsa.PublicKey:
		return errors.New("is an RSA key; a run signs with ed25519 or ECDSA P-256 only")
	}
	return fmt.Errorf("is a %T key; a run signs with ed25519 or ECDSA P-256 only", key)
}

func p256(c elliptic.Curve) error {
	if c != elliptic.P256() {
		return fmt.Errorf("is an ECDSA key on %s; a run signs with ECDSA on P-256 (or ed25519) only", c.Params().Name)
	}
	return nil
}

// signerVerifier is securesystemslib's signer or verifier of pemBytes,
// whose key id it computes as every securesystemslib does.
func signerVerifier(pemBytes []byte, key any) (dsse.SignerVerifier, Signing, error) {
	sk, err := signerverifier.LoadKey(pemBytes)
	if err != nil {
		return nil, Signing{}, fmt.Errorf("could not be loaded by securesystemslib (%v)", err)
	}
	var sv dsse.SignerVerifier
	switch key.(type) {
	case ed25519.PrivateKey, ed25519.PublicKey:
		sv, err = signerverifier.NewED25519SignerVerifierFromSSLibKey(sk)
	default:
		sv, err = signerverifier.NewECDSASignerVerifierFromSSLibKey(sk)
	}
	if err != nil {
		return nil, Signing{}, fmt.Errorf("could not be loaded by securesystemslib (%v)", err)
	}
	return sv, Signing{Scheme: sk.Scheme, KeyID: sk.KeyID}, nil
}

// Verifier checks an envelope's signature with one public key.
type Verifier struct {
	v       dsse.Verifier
	signing Signing
}

// LoadVerifier reads the public key (PEM "PUBLIC KEY") of audit --verify
// --key.
func LoadVerifier(path string) (*Verifier, error) {
	pemBytes, err := inputfile.Read(path, maxKeyFile)
	if err != nil {
		return nil, exit.Within(RefuseVerifyKeyUnreadable, err, "--key %v; name the PEM file of the signer's public key", err)
	}
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "PUBLIC KEY" {
		what := "holds no PEM block"
		if b != nil {
			what = fmt.Sprintf("holds a PEM block of type %q", b.Type)
		}
		return nil, exit.Refuse(RefuseVerifyKeyUnsupported, "--key %s %s; give the signer's public key in PEM (\"PUBLIC KEY\": openssl pkey -in KEY -pubout)", path, what)
	}
	key, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		err = fmt.Errorf("holds a public key that does not parse (%v)", err)
	} else if err = supported(key); err == nil {
		var sv dsse.SignerVerifier
		var signing Signing
		if sv, signing, err = signerVerifier(pemBytes, key); err == nil {
			return &Verifier{v: sv, signing: signing}, nil
		}
	}
	return nil, exit.Within(RefuseVerifyKeyUnsupported, err, "--key %s %v", path, err)
}

// Signing names the key.
func (v *Verifier) Signing() Signing { return v.signing }
