// Package mcpserve is metaharness's own tool surface: the tool-contract
// (catalogue) loader and its refusals, the scratch copy, the argument checks
// of a tools/call, the built-in performers and the MCP server (mcp-go)
// behind the mcp-serve verb (SPEC §7).
//
// For a run, the launcher calls, in order: LoadContract (the file-level
// refusals), (*Contract).CheckFor (the refusals that depend on the kind and
// the flags), WriteScratchCopy (the copy the server the child starts reads,
// read back and compared before the spawn), and answers the decision
// channel (internal/decide) on a private unix socket whose path it hands the
// server (--decisions-socket, or $METAHARNESS_DECISIONS_SOCKET).
// Options.Resolve, OperationOf and Subjects read a call back into its entry,
// operation and subjects for frames and records.
//
// Before performing, the server asks the run over that channel (one
// decide.Request out, one record.Decision back). allow and abstain perform; deny answers
// isError with the reason and performs nothing; replace performs with the
// replaced input after the same argument checks. A channel that fails
// denies the call, naming the failure. Without a socket the server decides
// standalone: it allows every call and records each decision as one JSON
// line on stderr.
package mcpserve
