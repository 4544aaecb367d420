package traceir

import (
	"fmt"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/internal/jsonscan"
)

// MaxAttestationBytes bounds an attestation document a page reads: a run
// writes one of a few hundred kilobytes at most (the proxy keeps its
// latest 4096 records).
const MaxAttestationBytes = 32 << 20

// ReadAttestation reads data, named name, as a run's attestation document
// (metaharness.attestation/1), strictly: a key this build does not know,
// or one given twice, refuses it, so that a page never shows a verdict it
// misread.
func ReadAttestation(name string, data []byte) (*attest.Document, error) {
	var d attest.Document
	if err := jsonscan.Decode(data, &d, jsonscan.Options{RefuseUnknown: true}); err != nil {
		return nil, fmt.Errorf("%s is not an attestation document this build reads (%v)", name, err)
	}
	if d.Format != attest.DocumentFormat {
		return nil, fmt.Errorf("%s is a %q document, not an attestation (%s)", name, d.Format, attest.DocumentFormat)
	}
	return &d, nil
}

// RunID is the run the stream's first line names, read alone.
func (s *Stream) RunID() (string, error) {
	var run string
	errFirst := fmt.Errorf("first line read")
	_, err := s.each(nil, func(n int, _ int64, line []byte) error {
		l, err := s.parse(n, line)
		if err != nil {
			return err
		}
		run = l.Run
		return errFirst
	})
	if err != nil && err != errFirst {
		return "", err
	}
	return run, nil
}
