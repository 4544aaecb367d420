package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"

	"github.com/metaharness/metaharness/conformance"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/inputfile"
	"github.com/metaharness/metaharness/internal/newfile"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/launcher/kinds"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/traceir"
)

type projectCmd struct {
	Events []string `arg:"" name:"EVENTS" help:"The event stream to project; with --html a second one is shown beside it."`
	To     string   `default:"trace-ir" help:"The document format: trace-ir, the only one (the default)."`
	Out    string   `placeholder:"FILE" help:"Write the document to FILE (it must not exist yet) instead of stdout." type:"path"`
	HTML   string   `name:"html" placeholder:"PAGE" help:"Render the run (or both runs) as one static page at PAGE (it must not exist yet)." type:"path"`
	From   string   `placeholder:"FORMAT" help:"Read EVENTS as a raw vendor record in FORMAT through the kind's own reader: claude-stream-json (Claude Code's stream-json), codex-app-server (a codex run's retained JSON-RPC conversation), gemini-stream-json (Gemini CLI's stream-json) or b10x-jsonl (b10x-harness's --json record). Default: EVENTS is a metaharness event stream."`
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
		err := writeNew(c.HTML, "--html", func(w io.Writer) error { return traceir.RenderHTML(w, streams...) })
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
