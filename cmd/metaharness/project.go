package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/conformance"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/inputfile"
	"github.com/metaharness/metaharness/internal/newfile"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/launcher/kinds"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/traceir"
)

type projectCmd struct {
	Events      []string `arg:"" name:"EVENTS" help:"The event stream to project; with --html a second one is shown beside it."`
	To          string   `default:"trace-ir" help:"The document format: trace-ir, the only one (the default)."`
	Out         string   `placeholder:"FILE" help:"Write the document to FILE (it must not exist yet) instead of stdout." type:"path"`
	HTML        string   `name:"html" placeholder:"PAGE" help:"Render the run (or both runs) as one static page at PAGE (it must not exist yet): the verdict first, the attestation's rows, a timeline, the model requests, the warnings, the tool calls and the events; two runs side by side, their differences marked."`
	Attestation []string `name:"attestation" sep:"none" placeholder:"FILE" help:"With --html: the run's attestation document (run --attestation FILE), which holds the verdicts, the exit code and the loopback proxy's records; given once per EVENTS, each matched to the stream of its run. A stream named metaharness-events.jsonl (--records-dir) is paired with the metaharness-attestation.json beside it unless this names one." type:"path"`
	From        string   `placeholder:"FORMAT" help:"Read EVENTS as a raw vendor record in FORMAT through the kind's own reader: claude-stream-json (Claude Code's stream-json), codex-app-server (a codex run's retained JSON-RPC conversation), gemini-stream-json (Gemini CLI's stream-json) or b10x-jsonl (b10x-harness's --json record). Default: EVENTS is a metaharness event stream."`
}

func (c *projectCmd) run(e *env) (exit.Code, error) {
	if c.To != "trace-ir" {
		return exit.Refused, exit.Refuse(RefuseToUnsupported, "--to %s: project writes trace-ir only; drop --to or pass --to trace-ir", c.To)
	}
	switch {
	case len(c.Events) > 2:
		return exit.Refused, exit.Refuse(RefuseViewerColumnCount, "%d streams were given; a page shows one or two runs, and a document is made of one", len(c.Events))
	case len(c.Events) == 2 && c.HTML == "":
		return exit.Refused, exit.Refuse(RefuseViewerColumnCount, "two streams were given without --html; a trace-ir document is made of one stream, a page (--html PAGE) shows two side by side")
	case len(c.Events) == 2 && c.Out != "":
		return exit.Refused, exit.Refuse(RefuseViewerColumnCount, "--out writes one stream's document, and two streams were given; drop --out, or project each stream on its own")
	}
	if len(c.Attestation) > 0 && c.HTML == "" {
		return exit.Refused, exit.Refuse(RefuseAttestationWithoutHTML, "--attestation %s is shown on a page, and no --html names one; add --html PAGE, or drop --attestation (a trace-ir document is made of the stream alone)", c.Attestation[0])
	}
	if len(c.Attestation) > len(c.Events) {
		return exit.Refused, exit.Refuse(RefuseAttestationUnmatched, "%d attestation documents were given for %d stream(s); give at most one per EVENTS", len(c.Attestation), len(c.Events))
	}
	var from kind.Replayer
	if c.From != "" {
		var ok bool
		if from, ok = kinds.ByRecordFormat(c.From); !ok {
			return exit.Refused, exit.Refuse(RefuseFromFormatUnknown, "--from %s: the raw records project reads are %s, each a kind's own record read through its own reader; name one of them", c.From, strings.Join(kinds.RecordFormats(), ", "))
		}
	}
	var streams []*traceir.Stream
	var sources []traceir.Source
	for _, path := range c.Events {
		s, src, closeIt, err := c.open(path, from)
		if err != nil {
			return exit.Refused, err
		}
		defer closeIt()
		streams, sources = append(streams, s), append(sources, src)
	}
	if c.HTML != "" {
		runs, err := c.pageRuns(streams)
		if err != nil {
			return exit.Refused, err
		}
		err = writeNew(c.HTML, "--html", func(w io.Writer) error { return traceir.RenderHTML(w, runs...) })
		if err != nil {
			return exit.Refused, err
		}
		if c.Out == "" {
			return exit.OK, nil
		}
	}
	project := func(w io.Writer) error { return traceir.Project(w, streams[0], sources[0]) }
	if c.Out == "" {
		if err := project(e.stdout); err != nil {
			var r *exit.Refusal
			if errors.As(err, &r) {
				return exit.Refused, err
			}
			return exit.OK, err
		}
		return exit.OK, nil
	}
	if err := writeNew(c.Out, "--out", project); err != nil {
		return exit.Refused, err
	}
	return exit.OK, nil
}

// open opens EVENTS at path: an event stream is read where it lies, each
// pass from its start (project holds a line at a time, whatever the
// stream's length); a raw record (--from) is read whole, at most
// traceir.MaxRecordBytes, and replayed through its kind's reader into a
// stream in memory, whose document's digest is the raw record's.
func (c *projectCmd) open(path string, from kind.Replayer) (*traceir.Stream, traceir.Source, func(), error) {
	src := traceir.Source{Format: record.EventFormat}
	if from == nil {
		f, fi, err := inputfile.Open(path)
		if err != nil {
			return nil, src, nil, unreadable(err)
		}
		return traceir.NewStream(path, f, fi.Size()), src, func() { f.Close() }, nil
	}
	data, err := inputfile.Read(path, traceir.MaxRecordBytes)
	if err != nil {
		return nil, src, nil, unreadable(err)
	}
	sum := sha256.Sum256(data)
	events, err := conformance.Replay(from, "from-"+hex.EncodeToString(sum[:6]), data)
	if err != nil {
		return nil, src, nil, exit.Wrap(traceir.RefuseUnreadable, err, "%s cannot be read as %s", path, c.From)
	}
	src.Format, src.Digest = c.From, hex.EncodeToString(sum[:])
	return traceir.StreamOf(path, events), src, func() {}, nil
}

// pageRuns pairs each stream with its run's attestation document: the one
// --attestation names whose run is the stream's (in the order given, when
// both streams are one run's), else the metaharness-attestation.json a
// run's records directory keeps beside its metaharness-events.jsonl.
func (c *projectCmd) pageRuns(streams []*traceir.Stream) ([]traceir.Run, error) {
	runs := make([]traceir.Run, len(streams))
	ids := make([]string, len(streams))
	for i, s := range streams {
		runs[i].Stream = s
		id, err := s.RunID()
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	for _, path := range c.Attestation {
		doc, err := readAttestation(path)
		if err != nil {
			return nil, err
		}
		i := 0
		for i < len(runs) && (runs[i].Attestation != nil || ids[i] != doc.Run) {
			i++
		}
		if i == len(runs) {
			return nil, exit.Refuse(RefuseAttestationUnmatched, "--attestation %s is the attestation of run %s, and no EVENTS given (%s) is that run's stream, or its stream has one already; give each stream its own run's attestation", path, doc.Run, strings.Join(ids, ", "))
		}
		runs[i].Attestation, runs[i].AttestationName = doc, path
	}
	for i, s := range streams {
		if runs[i].Attestation != nil || filepath.Base(s.Name) != launcher.ArtifactEvents {
			continue
		}
		path := filepath.Join(filepath.Dir(s.Name), launcher.ArtifactAttestation)
		if _, err := os.Lstat(path); err != nil {
			continue
		}
		doc, err := readAttestation(path)
		if err != nil {
			return nil, err
		}
		if doc.Run != ids[i] {
			return nil, exit.Refuse(RefuseAttestationUnmatched, "%s is the attestation of run %s, and the stream beside it, %s, is run %s's; name the run's own with --attestation FILE", path, doc.Run, s.Name, ids[i])
		}
		runs[i].Attestation, runs[i].AttestationName = doc, path
	}
	return runs, nil
}

func readAttestation(path string) (*attest.Document, error) {
	data, err := inputfile.Read(path, traceir.MaxAttestationBytes)
	if err != nil {
		return nil, exit.Within(RefuseAttestationUnreadable, err, "%v; name the run's attestation document (run --attestation FILE), a regular file", err)
	}
	doc, err := traceir.ReadAttestation(path, data)
	if err != nil {
		return nil, exit.Within(RefuseAttestationUnreadable, err, "%v; name the run's attestation document (run --attestation FILE) as the run wrote it", err)
	}
	return doc, nil
}

func unreadable(err error) error {
	if errors.Is(err, inputfile.ErrTooLarge) {
		return exit.Within(traceir.RefuseUnreadable, err, "%v, the largest raw record project --from reads (its kind's reader takes it whole); project the run's own event stream instead, which has no such bound", err)
	}
	return exit.Within(traceir.RefuseUnreadable, err, "%v; name a recorded stream or raw record, a regular file", err)
}

// writeNew creates path, which must not exist yet, and lets write fill it;
// a failed write leaves no file behind. A refusal of write's own (the input
// could not be projected) comes back as it is.
func writeNew(path, flag string, write func(io.Writer) error) error {
	err := newfile.Stream(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
	var r *exit.Refusal
	if err == nil || errors.As(err, &r) {
		return err
	}
	return exit.Wrap(RefuseOutputFile, err, "%s %s cannot be created (it must not exist yet, so that nothing earlier is overwritten)", flag, path)
}
