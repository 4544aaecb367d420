#!/usr/bin/env bash
# An embedder of `metaharness run … --decisions ask`, in bash and jq: it
# starts the run given as its arguments, passes the event stream through to
# stdout, and answers each call waiting for a decision (a tool.requested
# with "decision_required": true) with a tool.decide on the run's stdin:
# allow when everything the call resolves to only reads (file.read,
# dir.list, search), deny with a reason otherwise. It ends with the run's
# exit status.
#
#   allow-reads.sh metaharness run claude --decisions ask -p TASK …
set -euo pipefail
coproc RUN { "$@"; }
run_pid=$RUN_PID
exec 3<&"${RUN[0]}" 4>&"${RUN[1]}"
while IFS= read -r line <&3; do
  printf '%s\n' "$line"
  jq -e '.event == "tool.requested" and .decision_required' <<<"$line" >/dev/null || continue
  decision=$(jq -c 'if (.operations | length > 0 and all(. == "file.read" or . == "dir.list" or . == "search"))
    then {decision: "allow"}
    else {decision: "deny", reason: "this step only reads; \(.name) resolves to \(.operations | join(", "))"} end' <<<"$line")
  jq -cn --argjson line "$line" --argjson decision "$decision" \
    '{format: "metaharness.command/1", id: ("decide-" + $line.call_id), command: "tool.decide", call_id: $line.call_id, decision: $decision}' >&4
done
exec 4>&-
wait "$run_pid"
