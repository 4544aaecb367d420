// Command runpageshot makes the README's picture of the run page
// (`make screenshot`): the page of traceir's recorded governed run (its
// stream and the attestation its run wrote) rendered by project --html's
// own code, opened in headless Chromium (testkit/browser) and its top,
// the verdict and the first rows, kept as a PNG:
//
//	scripts/loopback-only go run ./testkit/runpageshot docs/run-page.png
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metaharness/metaharness/testkit/browser"
	"github.com/metaharness/metaharness/traceir"
)

// The run the picture shows, and how much of its page.
const (
	events      = "traceir/testdata/streams/forged-request-throttled.jsonl"
	attestation = "traceir/testdata/streams/forged-request-throttled.attestation.json"
	width       = 1000
	height      = 1150
)

func main() {
	if err := shoot(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "runpageshot:", err)
		os.Exit(1)
	}
}

func shoot(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: go run ./testkit/runpageshot OUT.png (from the module's root)")
	}
	bin := browser.Binary()
	if bin == "" {
		return errors.New("chromium is not installed (apt-get install chromium)")
	}
	data, err := os.ReadFile(events)
	if err != nil {
		return err
	}
	doc, err := os.ReadFile(attestation)
	if err != nil {
		return err
	}
	att, err := traceir.ReadAttestation(attestation, doc)
	if err != nil {
		return err
	}
	var page bytes.Buffer
	run := traceir.Run{Stream: traceir.StreamOf(filepath.Base(events), data), Attestation: att, AttestationName: filepath.Base(attestation)}
	if err := traceir.RenderHTML(&page, run); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "runpageshot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "page.html")
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		return err
	}
	b, err := browser.Launch(bin, dir)
	if err != nil {
		return err
	}
	defer b.Close()
	p, err := b.Open("file://"+path, browser.Options{Width: width, Height: height})
	if err != nil {
		return err
	}
	if r := p.Requests(); len(r) != 1 {
		return fmt.Errorf("the page asked for %q", r)
	}
	return p.ScreenshotClip(args[0], 0, 0, width, height)
}
