// The official MCP TypeScript SDK client against `metaharness mcp-serve`.
// Usage: node ts-sdk-client.cjs <expect.json> <server command> [args...]
// (NODE_PATH names the node_modules holding @modelcontextprotocol/sdk.)
// expect.json: {"tools": [names, sorted], "calls": [{"name", "arguments"
// (omitted: sent without arguments; the raw JSON value otherwise, null and
// lists included), "isError": bool, "text": substring, "protocolError": code}]}.
// Prints one JSON line per check and exits 1 when any failed.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { CallToolResultSchema } = require("@modelcontextprotocol/sdk/types.js");
const fs = require("node:fs");

async function main() {
  const [expectFile, command, ...args] = process.argv.slice(2);
  const expect = JSON.parse(fs.readFileSync(expectFile, "utf8"));
  const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
  const client = new Client({ name: "metaharness-ts-sdk-test", version: "0" });
  let failed = 0;
  const check = (what, ok, detail) => {
    if (!ok) failed++;
    console.log(JSON.stringify({ check: what, ok, detail }));
  };
  await client.connect(transport);
  check("initialize", client.getServerVersion()?.name === "metaharness", client.getServerVersion());
  await client.setLoggingLevel("info");

  // listTools validates every tool against the SDK's schema (zod): one tool
  // whose inputSchema it refuses fails the whole listing.
  const list = await client.listTools();
  const names = list.tools.map((t) => t.name).sort();
  check("tools/list", JSON.stringify(names) === JSON.stringify(expect.tools), names);
  for (const t of list.tools) {
    check(`tools/list ${t.name} description`, typeof t.description === "string" && t.description.length > 0, t.description);
  }

  for (const c of expect.calls) {
    const params = { name: c.name };
    if ("arguments" in c) params.arguments = c.arguments;
    const what = `tools/call ${c.name} ${"arguments" in c ? JSON.stringify(c.arguments) : "(no arguments)"}`;
    try {
      // A raw request, so that null and lists reach the server as sent.
      const r = await client.request({ method: "tools/call", params }, CallToolResultSchema);
      const text = (r.content || []).map((x) => x.text || "").join("");
      check(what, !c.protocolError && !!r.isError === c.isError && text.includes(c.text), { isError: !!r.isError, text });
    } catch (e) {
      check(what, c.protocolError !== undefined && e.code === c.protocolError, { error: String(e), code: e.code });
    }
  }
  await client.ping();
  await client.close();
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.log(JSON.stringify({ check: "client", ok: false, detail: String(e && e.stack || e) }));
  process.exit(1);
});
