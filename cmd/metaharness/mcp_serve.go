package main

import (
	"context"
	"os/signal"
	"syscall"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/mcpserve"
)

type mcpServeCmd struct {
	Catalogue       string   `placeholder:"FILE" help:"Serve this tool contract (YAML or JSON): each entry under its mcp rendering and nothing else. Without it, the default verbs tool_search, tool_describe and tool_invoke."`
	Workspace       string   `default:"." placeholder:"DIR" help:"The directory the tools act beneath (default: the current directory)."`
	StrictCatalogue bool     `name:"strict-catalogue" help:"Refuse a --catalogue with an entry this build performs none of (catalogue-entry-not-performed), instead of a warning on stderr."`
	Writable        bool     `help:"Admit the write entries (fs.write, fs.edit)."`
	AllowProgram    []string `name:"allow-program" sep:"none" placeholder:"P" help:"A program the default surface's run entry may start (repeatable; needs --writable; refused beside --catalogue)."`
	HTTP            string   `name:"http" placeholder:"127.0.0.1:PORT" help:"Serve streamable HTTP at /mcp on this loopback address instead of stdio; prints {\"url\":…} on stdout."`
	DecisionsSocket string   `name:"decisions-socket" placeholder:"PATH" help:"Ask the decider listening on this unix socket before each call (default $METAHARNESS_DECISIONS_SOCKET). Unset: allow each call and record it on stderr."`
}

func (c *mcpServeCmd) run(e *env) (exit.Code, error) {
	socket := c.DecisionsSocket
	if socket == "" {
		socket = e.getenv(mcpserve.EnvDecisionsSocket)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := mcpserve.Serve(ctx, mcpserve.Config{
		Catalogue:       c.Catalogue,
		StrictCatalogue: c.StrictCatalogue,
		Workspace:       c.Workspace,
		Writable:        c.Writable,
		AllowPrograms:   c.AllowProgram,
		HTTP:            c.HTTP,
		DecisionsSocket: socket,
		Version:         version,
	}, e.stdin, e.stdout, e.stderr)
	if err != nil {
		return exit.Refused, err
	}
	return exit.OK, nil
}
