#!/bin/sh
# An embedder that spawns its own Claude Code, with metaharness's two
# sidecars beside it: the loopback proxy (the agent holds a placeholder;
# the proxy attaches the real token and refuses any other egress) and
# mcp-serve over HTTP (the tools the agent gets, each call recorded).
#
#   claude-with-sidecars.sh UPSTREAM WORKSPACE RECORDS TASK
#
# UPSTREAM is the model API root (https://api.anthropic.com); the real
# token is in $ANTHROPIC_API_KEY, which only the proxy sees. RECORDS is a
# new directory for what the sidecars leave: loopback.jsonl (the proxy's
# start line, any upstream_quota line, its counters at the end) and
# decisions.jsonl (one record per tool call). The agent's answer is on
# stdout. The agent gets a home and a TMPDIR of its own, removed at the
# end, so that nothing of it lands in the caller's ~/.claude,
# ~/.claude.json or TMPDIR. Needs jq.
set -eu
upstream=$1 workspace=$2 records=$3 task=$4
mkdir "$records"

metaharness loopback --upstream "$upstream" --token-env ANTHROPIC_API_KEY >"$records/loopback.jsonl" 2>"$records/loopback.log" &
proxy=$!
metaharness mcp-serve --http 127.0.0.1:0 --workspace "$workspace" >"$records/mcp.json" 2>"$records/decisions.jsonl" &
tools=$!
agent_home=$(mktemp -d)
mkdir "$agent_home/tmp"
# SIGTERM stops each sidecar cleanly: the proxy prints its counters line,
# mcp-serve ends its sessions.
stop() {
  kill -TERM "$proxy" "$tools" 2>/dev/null || true
  wait "$proxy" "$tools" || true
  rm -rf "$agent_home"
}
trap stop EXIT

# Each sidecar prints one JSON line once it is ready.
for f in loopback.jsonl mcp.json; do
  n=0
  until [ -s "$records/$f" ]; do
    n=$((n + 1)); [ "$n" -le 100 ] || { echo "a sidecar did not start; see $records" >&2; exit 2; }
    sleep 0.1
  done
done
unset ANTHROPIC_API_KEY

# Point the agent at both: the proxy's environment for Claude Code (base
# URL, placeholder, the egress gate as its proxy), and the MCP server's URL.
jq -n --arg url "$(jq -r .url "$records/mcp.json")" \
  '{mcpServers: {metaharness: {type: "http", url: $url}}}' >"$records/mcp-config.json"
eval "$(head -n 1 "$records/loopback.jsonl" | jq -r '.env.claude | to_entries[] | "export \(.key)=\(.value | @sh)"')"

cd "$workspace"
HOME=$agent_home CLAUDE_CONFIG_DIR=$agent_home/.claude TMPDIR=$agent_home/tmp CLAUDE_CODE_TMPDIR=$agent_home/tmp \
  claude -p "$task" --mcp-config "$records/mcp-config.json" --strict-mcp-config \
  --tools "" --allowedTools "mcp__metaharness" --permission-mode dontAsk \
  --setting-sources "" --no-session-persistence
