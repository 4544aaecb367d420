package main

import "github.com/metaharness/metaharness/exit"

type mcpServeCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"The server's flags."`
}

func (c *mcpServeCmd) run(e *env) (exit.Code, error) {
	return exit.Refused, notBuilt("mcp-serve", "the tool-contract loader and the MCP server (mcpserve)")
}
