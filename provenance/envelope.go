package provenance

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/metaharness/metaharness/internal/jsonscan"
)

// Seal is st in a DSSE envelope, one JSON line: signed by s, or, with s
// nil, unsigned, which its empty signature list and the predicate's null
// signing say. The predicate names s's key before it is signed.
func Seal(st Statement, s *Signer) ([]byte, error) {
	st.Type, st.PredicateType = StatementType, PredicateType
	st.Predicate.Signing = nil
	if s != nil {
		signing := s.signing
		st.Predicate.Signing = &signing
	}
	if st.Predicate.FinishedAt == "" {
		st.Predicate.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	}
	payload, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding the statement: %w", err)
	}
	env := &dsse.Envelope{PayloadType: PayloadType, Payload: base64.StdEncoding.EncodeToString(payload), Signatures: []dsse.Signature{}}
	if s != nil {
		es, err := dsse.NewEnvelopeSigner(s.sv)
		if err == nil {
			env, err = es.SignPayload(context.Background(), PayloadType, payload)
		}
		if err != nil {
			return nil, fmt.Errorf("signing the statement with %s key %s: %w", s.signing.Scheme, s.signing.KeyID, err)
		}
	}
	b, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("encoding the envelope: %w", err)
	}
	return append(b, '\n'), nil
}

// Sealed is an envelope read back: the envelope and its statement.
type Sealed struct {
	Envelope  dsse.Envelope
	Statement Statement
}

// envelopeDoc is the DSSE envelope as the strict reader walks it.
type envelopeDoc struct {
	PayloadType *string          `json:"payloadType"`
	Payload     *string          `json:"payload"`
	Signatures  []dsse.Signature `json:"signatures"`
}

// Open reads an envelope holding a statement of this predicate: a DSSE
// envelope (standard or URL-safe base64, as DSSE allows) whose payload is
// an in-toto Statement v1 with at least one subject, each with a sha256
// digest. A key given twice, in another case, or a shape other than that
// is an error naming what is wrong.
func Open(b []byte) (*Sealed, error) {
	var doc envelopeDoc
	if err := jsonscan.Decode(b, &doc, jsonscan.Options{}); err != nil {
		return nil, fmt.Errorf("is not a DSSE envelope (%v)", err)
	}
	if doc.PayloadType == nil || doc.Payload == nil {
		return nil, fmt.Errorf("is not a DSSE envelope (it lacks payloadType or payload)")
	}
	if *doc.PayloadType != PayloadType {
		return nil, fmt.Errorf("carries a payload of type %q, not an in-toto statement (%s)", *doc.PayloadType, PayloadType)
	}
	payload, err := base64.StdEncoding.DecodeString(*doc.Payload)
	if err != nil {
		if payload, err = base64.URLEncoding.DecodeString(*doc.Payload); err != nil {
			return nil, fmt.Errorf("has a payload that is not base64")
		}
	}
	out := &Sealed{Envelope: dsse.Envelope{PayloadType: *doc.PayloadType, Payload: *doc.Payload, Signatures: doc.Signatures}}
	if err := jsonscan.Decode(payload, &out.Statement, jsonscan.Options{}); err != nil {
		return nil, fmt.Errorf("has a payload that is not a statement (%v)", err)
	}
	st := &out.Statement
	switch {
	case st.Type != StatementType:
		return nil, fmt.Errorf("holds a statement of type %q, not %s", st.Type, StatementType)
	case st.PredicateType != PredicateType:
		return nil, fmt.Errorf("holds a statement whose predicate is %q, not a run's (%s)", st.PredicateType, PredicateType)
	case len(st.Subject) == 0:
		return nil, fmt.Errorf("holds a statement with no subject")
	}
	for i, s := range st.Subject {
		if d := s.Digest["sha256"]; len(d) != 64 || !isHex(d) {
			return nil, fmt.Errorf("holds subject %d (%.200q) without a sha256 digest of 64 hex digits", i+1, s.Name)
		}
	}
	return out, nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}
