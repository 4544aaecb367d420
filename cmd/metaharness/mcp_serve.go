package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/telemetry"
)

// sidecarExport is a standalone sidecar's OpenTelemetry export, when its
// --otlp-endpoint or $OTEL_EXPORTER_OTLP_ENDPOINT asks for one; nil
// otherwise.
func sidecarExport(flag, verb string, e *env) (*telemetry.Exporter, error) {
	cfg, err := telemetry.Resolve(flag, e.vars)
	if err != nil || cfg == nil {
		return nil, err
	}
	return telemetry.NewExporter(cfg, verb, version)
}

type mcpServeCmd struct {
	Catalogue       string   `placeholder:"FILE" help:"Serve this tool contract (YAML or JSON): each entry under its mcp rendering and nothing else. Without it, the default verbs tool_search, tool_describe and tool_invoke."`
	Workspace       string   `default:"." placeholder:"DIR" help:"The directory the tools act beneath (default: the current directory)."`
	StrictCatalogue bool     `name:"strict-catalogue" help:"Refuse a --catalogue with an entry this build performs none of (catalogue-entry-not-performed), instead of a warning on stderr."`
	Writable        bool     `help:"Admit the write entries (fs.write, fs.edit)."`
	AllowProgram    []string `name:"allow-program" sep:"none" placeholder:"P" help:"A program the default surface's run entry may start (repeatable; needs --writable; refused beside --catalogue)."`
	HTTP            string   `name:"http" placeholder:"127.0.0.1:PORT" help:"Serve streamable HTTP at /mcp on this loopback address instead of stdio; prints {\"url\":…} on stdout."`
	DecisionsSocket string   `name:"decisions-socket" placeholder:"PATH" help:"Ask the decider listening on this unix socket before each call (default $METAHARNESS_DECISIONS_SOCKET). Unset: allow each call and record it on stderr."`
	OTLPEndpoint    string   `name:"otlp-endpoint" placeholder:"URL" help:"Export each call (tool, call id, operation, decision, latency) as an OpenTelemetry span to this collector (OTLP; default $OTEL_EXPORTER_OTLP_ENDPOINT, with its _PROTOCOL and _HEADERS). No arguments or results by default."`
}

func (c *mcpServeCmd) run(e *env) (exit.Code, error) {
	socket := c.DecisionsSocket
	if socket == "" {
		socket = e.getenv(mcpserve.EnvDecisionsSocket)
	}
	x, err := sidecarExport(c.OTLPEndpoint, "mcp-serve", e)
	if err != nil {
		return exit.Refused, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg := mcpserve.Config{
		Catalogue:       c.Catalogue,
		StrictCatalogue: c.StrictCatalogue,
		Workspace:       c.Workspace,
		Writable:        c.Writable,
		AllowPrograms:   c.AllowProgram,
		HTTP:            c.HTTP,
		DecisionsSocket: socket,
		Version:         version,
	}
	if x != nil {
		cfg.Observe = x.Asker
		// stdout carries the protocol: what the export left undone goes to stderr.
		defer func() {
			if st := x.Done(); st.Error != "" {
				fmt.Fprintf(e.stderr, "metaharness: warning: the OpenTelemetry export to %s delivered %d of %d spans (%s)\n", st.Endpoint, st.Exported, st.Spans, st.Error)
			}
		}()
	}
	err = mcpserve.Serve(ctx, cfg, e.stdin, e.stdout, e.stderr)
	if err != nil {
		return exit.Refused, err
	}
	return exit.OK, nil
}
