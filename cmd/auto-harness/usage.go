package main

// usage is the binary's help: every command's synopsis (TestHelpListsEveryCommand
// holds it to the commands kong has, and TestReadmeCommandTable the README's
// table to both).
const usage = `auto-harness - the operator's tool for an Auto Harness control plane

The global flags --api-url, --api-key-file, --allow-insecure-http,
--admin-password-stdin and --admin-username go before or after the command:
"auto-harness --api-url URL host list" is "auto-harness host list --api-url URL".

Usage:
  auto-harness api <METHOD> <path> [--body <json> | --body-file <path|->]
  auto-harness whoami [--json]
  auto-harness doctor
  auto-harness host list [--online | --offline] [--limit N] [--cursor C] [--all] [--json]
  auto-harness host drain <hostId> [--json]
  auto-harness host resume <hostId> [--json]
  auto-harness host inventory get <hostId> [--json]
  auto-harness host inventory set <hostId> --file <path|->
  auto-harness host repo add <hostId> <repositoryId> --path <path> [--worktree <id>=<path>]...
      [--default-branch <branch>] [--dry-run] [--json]
  auto-harness host repo rm <hostId> <repositoryId> [--dry-run] [--json]
  auto-harness host smoke <hostId> --repo-path <path> --provider <id|name> [--provider <id|name>]...
      [--timeout <seconds>] [--json]
  auto-harness repo add --name <name> --url <url> [--default-branch <branch>] [--json]
  auto-harness repo list [--limit N] [--cursor C] [--all] [--json]
  auto-harness repo rm <repositoryId> [--json]
  auto-harness service-account list [--limit N] [--cursor C] [--all] [--json]
  auto-harness service-account create --name <name> --role <role> [--bound-host <hostId>]
      [--repositories <id,id,...>] (--key-file <path> | --print-key) [--json]
  auto-harness service-account rm <id> [--json]
  auto-harness session create --repo <repositoryId> (--provider <id|name> | --command <id|name>)
      --prompt <text> [--timeout <seconds>] [--ref <ref>] [--concurrency-id <id>]
      [--wait [--wait-timeout <seconds>]] [--json]
  auto-harness session get <sessionId> [--json]
  auto-harness session logs <sessionId> [--limit N] [--cursor C] [--json]
  auto-harness session cancel <sessionId> [--json]
  auto-harness dispatch    the dispatch Action's work, from HARNESS_* variables
                           (auto-harness dispatch --help lists them)
  auto-harness help | --help | -h
  auto-harness --version

Configuration (a flag always wins over its variable; an empty value is refused):
  --api-url <url>          the control plane (HARNESS_API_URL, alias HARNESS_API_HTTP)
  --api-key-file <path>    a file holding the API key (HARNESS_API_KEY_FILE)
  --allow-insecure-http    plain http, and only to a loopback host
The API key is never a flag: it would show in ps output and shell history. Set
HARNESS_API_KEY, or point --api-key-file / HARNESS_API_KEY_FILE at a file.

Admin bootstrap:
  --admin-password-stdin   log in as the admin with the password read from stdin
                           (one trailing newline stripped), only over https or to a
                           loopback host with --allow-insecure-http; the session
                           cookie is sent on every request, the password and the
                           cookie never printed. Not with an API key, nor with a
                           command that reads stdin itself (api --body-file -,
                           host inventory set --file -).
  --admin-username <name>  the admin's name (default admin)

Every command prints the server's records with --json as they came (key order
kept, two-space indented); lists page with --limit and --cursor, and --all
follows the pages itself, at most 20.

Exit codes: 0 done; 1 the control plane refused or did not answer, or a doctor
check failed, a waited session did not complete with exit code 0, a smoke failed;
2 a usage or configuration error, before any request was made.

Examples:
  auto-harness doctor
  auto-harness whoami --json
  auto-harness api GET /hosts
  auto-harness api POST /repositories --body '{"name":"filaments","url":"https://github.com/org/filaments"}'
  auto-harness host list --all --json
  auto-harness host inventory get host-1 --json > inventory.json
  auto-harness host inventory set host-1 --file inventory.json
  auto-harness host repo add host-1 repo-1 --path /repos/repo-1 --worktree wt-1=/repos/repo-1/wt-1
  auto-harness host repo rm host-1 repo-1 --dry-run
  auto-harness host smoke host-1 --repo-path /repos/repo-1 --provider claude --timeout 600
  auto-harness repo rm repo-1
  auto-harness session create --repo repo-1 --command mh-claude --prompt "Review the diff" --wait
  auto-harness session logs session-1 --limit 200
  KEY=$(auto-harness service-account create --name ci --role operator --print-key)
  aws ssm get-parameter --name /auto-harness/admin-password --with-decryption \
    --query Parameter.Value --output text \
    | auto-harness --admin-password-stdin service-account create --name ci --role operator --print-key
`

// dispatchUsage is `auto-harness dispatch --help`.
const dispatchUsage = `usage: auto-harness dispatch

Runs one operation of the dispatch Action against an Auto Harness control plane.
Every input is read from the environment (actions/dispatch/action.yml sets each
from the Action input of the same name) and checked before any request is sent.

  HARNESS_OPERATION                dispatch (the default), start-drain, get-drain,
                                   wait-for-drain or release-drain
  HARNESS_URL                      the control plane's https origin, optionally
                                   ending in /api/v1 (required)
  HARNESS_API_KEY                  the API key, sent as a bearer token (required)
  HARNESS_REQUEST_TIMEOUT_SECONDS  each request's deadline, its answer's body
                                   included (default 30, at most 300)
  HARNESS_REPOSITORY_ID            the repository (required)

dispatch creates a session:
  HARNESS_PROMPT                   the task (required)
  HARNESS_TARGET                   a JSON object naming what runs it: exactly one of
                                   providerId, providerName, commandId, commandName
  HARNESS_TIMEOUT                  the session's own bound in seconds (required)
  HARNESS_FALLBACKS                a JSON array of targets tried in order
  HARNESS_REF                      the git ref the session starts from
  HARNESS_CONCURRENCY_ID           sessions of one identity run one at a time
  HARNESS_METADATA                 a JSON object of string, number, boolean or
                                   null values (at most 8192 bytes)

start-drain cancels this key's own sessions of the repository and fences new ones:
  HARNESS_IDEMPOTENCY_KEY          makes a repeated start answer with the same drain
get-drain, wait-for-drain and release-drain name the drain:
  HARNESS_SESSION_DRAIN_ID         the drain's operation id (required)
wait-for-drain reads it until it ends, and succeeds only if it succeeded:
  HARNESS_POLL_INTERVAL_SECONDS    between reads (default 5)
  HARNESS_POLL_TIMEOUT_SECONDS     the whole wait's budget (default 900)

An input another operation uses is refused, not ignored. The results are appended
to GITHUB_OUTPUT (session-id, session-url, created; or operation-id, status,
queued-count, running-count, cancelled-count, failure-code, status-url, terminal)
and GITHUB_STEP_SUMMARY when they are set; under GITHUB_ACTIONS=true a session is
announced by a ::notice line.
`
