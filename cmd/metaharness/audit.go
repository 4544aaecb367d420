package main

import (
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/provenance"
)

// auditCmd verifies a run's statement (--verify), and takes the flags an
// audit of a foreign transcript will take, so that a misspelt one is a
// usage error like on every verb.
type auditCmd struct {
	Verify     string  `placeholder:"FILE" help:"Verify a run's statement (run --statement): its signature with --key, then each subject's digest against its file. One line per subject; exit 0 when it holds, 1 when it does not." type:"path"`
	Key        string  `placeholder:"PUB" help:"With --verify: the signer's public key (PEM)." type:"path"`
	Transcript string  `placeholder:"FILE" help:"The vendor transcript to audit." type:"path"`
	Events     string  `placeholder:"FILE" help:"The run's event stream." type:"path"`
	Spec       string  `placeholder:"FILE" help:"The document an external auditor checks the transcript against." type:"path"`
	Auditor    *string `placeholder:"PREFIX" help:"An external auditor: an argv prefix."`
}

func (c *auditCmd) run(e *env) (exit.Code, error) {
	if c.Verify != "" {
		return c.verify(e)
	}
	if c.Key != "" {
		return exit.Refused, exit.Refuse(RefuseKeyWithoutVerify, "--key %s is the public key of audit --verify FILE, and no --verify names a statement; add --verify FILE", c.Key)
	}
	// An audit of a foreign transcript refuses by design: a floor verdict
	// compares the record with the launch's own facts, which a transcript
	// from elsewhere does not carry.
	return exit.Refused, exit.Refuse(RefuseNotInThisMilestone,
		"audit waits for the launch facts a foreign transcript cannot carry (the planned cwd, the declared plugins, the pin, the attestation); "+
			"audit a run as it happens with `metaharness run <KIND> --audit` instead")
}

// verify checks a statement: 0 when its signature and every digest hold,
// 1 when one does not, 2 when the statement or the key cannot be read.
func (c *auditCmd) verify(e *env) (exit.Code, error) {
	if c.Transcript != "" || c.Events != "" || c.Spec != "" || c.Auditor != nil {
		return exit.Refused, exit.Refuse(RefuseVerifyAlone, "--verify checks a statement against the files it names and takes only --key; drop --transcript, --events, --spec and --auditor")
	}
	if c.Key == "" {
		return exit.Refused, exit.Refuse(provenance.RefuseVerifyKeyMissing, "--verify %s needs the signer's public key: add --key PUB (PEM; openssl pkey -in KEY -pubout)", c.Verify)
	}
	v, err := provenance.LoadVerifier(c.Key)
	if err != nil {
		return exit.Refused, err
	}
	rep, err := provenance.Verify(c.Verify, v)
	if err != nil {
		return exit.Refused, err
	}
	rep.Print(e.stdout, v)
	return rep.Code(), nil
}
