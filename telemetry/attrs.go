package telemetry

// Attribute names: the OpenTelemetry GenAI semantic conventions' where
// they name the thing (gen_ai.*), HTTP's for a proxied request, ours under
// metaharness.*.
const (
	AttrOperation     = "gen_ai.operation.name"
	AttrProvider      = "gen_ai.provider.name"
	AttrAgentName     = "gen_ai.agent.name"
	AttrAgentID       = "gen_ai.agent.id"
	AttrConversation  = "gen_ai.conversation.id"
	AttrRequestModel  = "gen_ai.request.model"
	AttrResponseModel = "gen_ai.response.model"
	AttrResponseID    = "gen_ai.response.id"
	AttrFinishReasons = "gen_ai.response.finish_reasons"
	AttrInputTokens   = "gen_ai.usage.input_tokens"
	AttrOutputTokens  = "gen_ai.usage.output_tokens"
	AttrToolName      = "gen_ai.tool.name"
	AttrToolCallID    = "gen_ai.tool.call.id"
	AttrToolArguments = "gen_ai.tool.call.arguments" // opt-in
	AttrToolResult    = "gen_ai.tool.call.result"    // opt-in
	AttrInputMessages = "gen_ai.input.messages"      // opt-in
	AttrOutputMessage = "gen_ai.output.messages"     // opt-in
	AttrErrorType     = "error.type"

	AttrHTTPMethod = "http.request.method"
	AttrHTTPStatus = "http.response.status_code"
	AttrURLPath    = "url.path"

	// The GenAI operations.
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"

	AttrVerb = "metaharness.verb"
	AttrRun  = "metaharness.run.id"
	// AttrDigestKey is the key a standalone sidecar's digests are taken
	// with (a run's are taken with its id, AttrRun).
	AttrDigestKey      = "metaharness.digest.key"
	AttrKind           = "metaharness.kind"
	AttrHermetic       = "metaharness.hermetic"
	AttrDecisions      = "metaharness.decisions"
	AttrCredentials    = "metaharness.credentials"
	AttrPromptDigest   = "metaharness.prompt.hmac_sha256"
	AttrPromptBytes    = "metaharness.prompt.bytes"
	AttrVendorVersion  = "metaharness.vendor.version"
	AttrVendorModel    = "metaharness.vendor.model"
	AttrExitCode       = "metaharness.exit_code"
	AttrOutcome        = "metaharness.outcome"
	AttrReason         = "metaharness.reason"
	AttrChildExit      = "metaharness.child_exit"
	AttrControlVerdict = "metaharness.control_verdict"
	AttrAudited        = "metaharness.audited"
	AttrRowsGap        = "metaharness.rows.gap"
	AttrRowsUnknown    = "metaharness.rows.unk"
	AttrCensusAllowed  = "metaharness.census.allowed"
	AttrCensusDenied   = "metaharness.census.denied"
	AttrCensusReplaced = "metaharness.census.replaced"
	AttrCensusAbstain  = "metaharness.census.abstained"
	AttrStreamReason   = "metaharness.stream.close_reason"
	AttrStreamEvents   = "metaharness.stream.events"
	AttrNumTurns       = "metaharness.num_turns"
	AttrCostUSD        = "metaharness.total_cost_usd"
	AttrTerminalReason = "metaharness.terminal_reason"
	AttrTurn           = "metaharness.turn"
	AttrStopReason     = "metaharness.stop_reason"
	AttrOperations     = "metaharness.tool.operations"
	AttrSubjects       = "metaharness.tool.subjects"
	AttrSeam           = "metaharness.tool.seam"
	AttrDecisionNeeded = "metaharness.tool.decision_required"
	AttrDecision       = "metaharness.tool.decision"
	AttrDecidedBy      = "metaharness.tool.decided_by"
	AttrDecisionMS     = "metaharness.tool.decision_latency_ms"
	AttrInputDigest    = "metaharness.tool.input.hmac_sha256"
	AttrInputBytes     = "metaharness.tool.input.bytes"
	AttrResultDigest   = "metaharness.tool.result.hmac_sha256"
	AttrResultBytes    = "metaharness.tool.result.bytes"
	AttrIsError        = "metaharness.tool.is_error"
	AttrUnfinished     = "metaharness.unfinished"
	AttrRoute          = "metaharness.proxy.route"
	AttrProxySeq       = "metaharness.proxy.seq"
	AttrBytesIn        = "metaharness.proxy.bytes_in"
	AttrBytesOut       = "metaharness.proxy.bytes_out"
	AttrRefused        = "metaharness.proxy.refused"
	AttrProxyError     = "metaharness.proxy.error"
	AttrStream         = "metaharness.proxy.stream"
	AttrCacheRead      = "metaharness.usage.cache_read_tokens"
	AttrCacheCreation  = "metaharness.usage.cache_creation_tokens"
	AttrWarningCode    = "metaharness.warning.code"
	AttrWarningMessage = "metaharness.warning.message" // opt-in
	AttrWarningBytes   = "metaharness.warning.bytes"
	AttrTextContent    = "metaharness.text" // opt-in
	AttrTextBytes      = "metaharness.text.bytes"
	AttrCommandID      = "metaharness.command.id"
	AttrCommandOutcome = "metaharness.command.outcome"
	AttrMCPTool        = "metaharness.mcp.tool"

	// EventWarning is a warning of the stream, as a span event.
	EventWarning = "metaharness.warning"
)
