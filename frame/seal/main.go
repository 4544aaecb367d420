// Command seal seals a frame: it reads a metaharness.frame/1 document,
// holds it to every rule a run's loader keeps but the digest, which it may
// leave out or state stale, and writes the document sealed (indented, keys
// sorted, the digest over its canonical content) on stdout:
//
//	go run ./frame/seal DRAFT > FRAME
//	go run github.com/metaharness/metaharness/frame/seal@VERSION DRAFT > FRAME
//
// DRAFT "-" (or none) is stdin. The digest goes to stderr too. A run never
// seals: a frame whose content does not match its digest is refused
// (frame-digest-mismatch), and only whoever writes frames says the change
// is meant, by sealing it again here (docs/frames.md).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/inputfile"
)

func main() {
	if err := seal(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "seal:", err)
		os.Exit(2)
	}
}

func seal(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 1 {
		return errors.New("usage: go run ./frame/seal [DRAFT] > FRAME (DRAFT - or none: stdin)")
	}
	var data []byte
	var err error
	if len(args) == 0 || args[0] == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, frame.MaxBytes+1))
		if err == nil && len(data) > frame.MaxBytes {
			err = fmt.Errorf("stdin holds more than the %d bytes a frame may have", frame.MaxBytes)
		}
	} else {
		data, err = inputfile.Read(args[0], frame.MaxBytes)
	}
	if err != nil {
		return fmt.Errorf("reading the draft: %w", err)
	}
	f, err := frame.ParseDraft(data)
	if err != nil {
		return fmt.Errorf("the draft cannot be sealed: %w", err)
	}
	if _, err := stdout.Write(f.Encode()); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stderr, "seal: digest %s\n", f.Digest())
	return err
}
