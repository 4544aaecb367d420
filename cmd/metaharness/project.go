package main

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/metaharness/metaharness/conformance"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/inputfile"
	"github.com/metaharness/metaharness/internal/newfile"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/kinds"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/traceir"
)

type projectCmd struct {
	Events []string `arg:"" name:"EVENTS" help:"The event stream to project; with --html a second one is shown beside it."`
	To     string   `default:"trace-ir" help:"The document format: trace-ir, the only one (the default)."`
	Out    string   `placeholder:"FILE" help:"Write the document to FILE (it must not exist yet) instead of stdout." type:"path"`
	HTML   string   `name:"html" placeholder:"PAGE" help:"Render the run (or both runs) as one static page at PAGE (it must not exist yet)." type:"path"`
	From   string   `placeholder:"FORMAT" help:"Read EVENTS as a raw vendor record in FORMAT through the kind's own reader: claude-stream-json (Claude Code's stream-json), codex-app-server (a codex run's retained JSON-RPC conversation) or b10x-jsonl (b10x-harness's --json record). Default: EVENTS is a metaharness event stream."`
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
	var from launcher.Replayer
	if c.From != "" {
		var ok bool
		if from, ok = kinds.ByRecordFormat(c.From); !ok {
			return exit.Refused, exit.Refuse(RefuseFromFormatUnknown, "--from %s: the raw records project reads are %s, each a kind's own record read through its own reader; name one of them", c.From, strings.Join(kinds.RecordFormats(), ", "))
		}
	}
	var streams []*traceir.Stream
	var sources []traceir.Source
	for _, path := range c.Events {
		data, err := inputfile.Read(path, traceir.MaxInputBytes)
		if err != nil {
			return exit.Refused, exit.Within(traceir.RefuseUnreadable, err, "%v; name a recorded stream or raw record, a regular file", err)
		}
		src := traceir.Source{Format: record.EventFormat, Bytes: data}
		events := data
		if from != nil {
			sum := sha256.Sum256(data)
			if events, err = conformance.Replay(from, "from-"+hex.EncodeToString(sum[:6]), data); err != nil {
				return exit.Refused, exit.Wrap(traceir.RefuseUnreadable, err, "%s cannot be read as %s", path, c.From)
			}
			src.Format = c.From
		}
		s, err := traceir.ReadStream(path, events)
		if err != nil {
			return exit.Refused, err
		}
		streams, sources = append(streams, s), append(sources, src)
	}
	if c.HTML != "" {
		page, err := traceir.RenderHTML(streams...)
		if err != nil {
			return exit.Refused, err
		}
		if err := writeNew(c.HTML, "--html", page); err != nil {
			return exit.Refused, err
		}
		if c.Out == "" {
			return exit.OK, nil
		}
	}
	d, err := traceir.Project(streams[0], sources[0])
	if err != nil {
		return exit.Refused, err
	}
	doc, err := d.Encode()
	if err != nil {
		return exit.Refused, err
	}
	if c.Out == "" {
		_, err = e.stdout.Write(doc)
		return exit.OK, err
	}
	if err := writeNew(c.Out, "--out", doc); err != nil {
		return exit.Refused, err
	}
	return exit.OK, nil
}

// writeNew writes b to path, which must not exist yet; a failed write
// leaves no file behind.
func writeNew(path, flag string, b []byte) error {
	if err := newfile.Write(path, b, 0o644); err != nil {
		return exit.Wrap(RefuseOutputFile, err, "%s %s cannot be created (it must not exist yet, so that nothing earlier is overwritten)", flag, path)
	}
	return nil
}
