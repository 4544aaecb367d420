// The control planes and host daemons scripts/auto-harness-real runs the
// built auto-harness against: Auto Harness's own code, from a checkout
// staged outside this clone (AH_STAGE), run with
// Node 22 and nothing of ours in between.
//
//   - 127.0.0.1:7420: the in-memory control plane, auth disabled, with its
//     WebSocket for the daemons and its scheduler sweeping every 200 ms;
//   - 127.0.0.1:7430: a second one in required mode, whose one admin is
//     "admin" with the password in AH_ADMIN_PASSWORD;
//   - a real host daemon (startDaemon, its PTY runner) for each host in
//     AH_HOSTS, running while that host's inventory on :7420 lists a
//     repository and stopped when it lists none. The daemon at 178686c
//     learns of a repository only at its next inventory poll, and a session
//     assigned before that fails setup_failed ("Unknown repository"); so,
//     as Auto Harness's own e2e of host smoke does at that commit, it is
//     started only once the attach is visible, from that inventory.
//
// Rate limits are off on both planes. Prints one JSON line on stdout when
// everything listens, logs on stderr, and stops on SIGTERM or SIGINT.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const stage = process.env.AH_STAGE;
if (!stage) {
  console.error("auto-harness-real-plane: AH_STAGE (the staged checkout) is required");
  process.exit(2);
}
const load = (path) => import(pathToFileURL(join(stage, path)).href);
const { startLocalServer } = await load("services/api/src/local-server.ts");
const { AuthService } = await load("services/api/src/auth.ts");
const { startDaemon } = await load("services/host-daemon/src/start-daemon.ts");
const { fetchHostInventory } = await load("services/host-daemon/src/bootstrap.ts");

const OPEN = 7420;
const REQUIRED = 7430;
const noLimits = { enabled: false };

const open = await startLocalServer({
  port: OPEN,
  useDynamo: false,
  enableWs: true,
  publicBaseUrl: "http://ui",
  scheduler: { intervalMs: 200 },
  rateLimitConfig: noLimits,
});
const admins = Buffer.from(
  JSON.stringify([{ username: "admin", password: process.env.AH_ADMIN_PASSWORD ?? "" }]),
).toString("base64url");
const required = await startLocalServer({
  port: REQUIRED,
  useDynamo: false,
  enableWs: false,
  publicBaseUrl: "http://ui",
  authService: new AuthService({ mode: "required", secret: randomBytes(32).toString("hex"), admins }),
  rateLimitConfig: noLimits,
});

// What a session's child gets: the daemon builds its environment from this
// (HOME, PATH, … and the names HARNESS_CHILD_ENV_ALLOWLIST lists).
const childEnvSource = {
  HOME: process.env.HOME,
  PATH: process.env.PATH,
  LANG: process.env.LANG ?? "C.UTF-8",
  USER: process.env.USER ?? "root",
  LOGNAME: process.env.LOGNAME ?? "root",
  SHELL: "/bin/sh",
  TMPDIR: process.env.TMPDIR ?? "/tmp",
  HARNESS_CHILD_ENV_ALLOWLIST: "ANTHROPIC_API_KEY",
  ANTHROPIC_API_KEY: process.env.AH_MODEL_KEY ?? "sk-scripted",
};
// The daemon's own processes (its git probe among them) build their
// environment from process.env the same way: every name the allowlist
// lists must be set there too, or each of them fails.
process.env.HARNESS_CHILD_ENV_ALLOWLIST = childEnvSource.HARNESS_CHILD_ENV_ALLOWLIST;
process.env.ANTHROPIC_API_KEY = childEnvSource.ANTHROPIC_API_KEY;

const apiUrl = `http://127.0.0.1:${OPEN}`;
const daemons = new Map(); // hostId -> { stop } once started
const busy = new Set();

async function attachedRepositories(hostId) {
  const res = await fetch(`${apiUrl}/api/v1/hosts/${encodeURIComponent(hostId)}/inventory`);
  if (!res.ok) return 0;
  const body = await res.json();
  return Array.isArray(body.repositories) ? body.repositories.length : 0;
}

async function watch(hostId) {
  if (busy.has(hostId)) return;
  busy.add(hostId);
  try {
    const repos = await attachedRepositories(hostId);
    const running = daemons.get(hostId);
    if (repos > 0 && !running) {
      const identity = { hostId, apiUrl };
      const config = await fetchHostInventory(identity);
      const daemon = await startDaemon({
        config,
        identity,
        inventoryPollMs: 500,
        childEnvSource,
        log: (line) => console.error(`[daemon ${hostId}] ${line}`),
        error: (line) => console.error(`[daemon ${hostId}] error: ${line}`),
      });
      daemons.set(hostId, daemon);
      console.error(`[plane] daemon of ${hostId} started (${repos} repository(ies) attached)`);
    } else if (repos === 0 && running) {
      daemons.delete(hostId);
      await running.stop().catch((err) => console.error(`[plane] stopping ${hostId}: ${err}`));
      console.error(`[plane] daemon of ${hostId} stopped (no repository attached)`);
    }
  } catch (err) {
    console.error(`[plane] watching ${hostId}: ${err instanceof Error ? err.message : err}`);
  } finally {
    busy.delete(hostId);
  }
}

const hosts = (process.env.AH_HOSTS ?? "").split(",").filter(Boolean);
const timer = setInterval(() => hosts.forEach((h) => void watch(h)), 50);

let stopping = false;
async function shutdown() {
  if (stopping) return;
  stopping = true;
  clearInterval(timer);
  for (const [hostId, d] of daemons) {
    await d.stop().catch((err) => console.error(`[plane] stopping ${hostId}: ${err}`));
  }
  await open.close();
  await required.close();
  process.exit(0);
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);

console.log(JSON.stringify({ open: OPEN, required: REQUIRED, hosts }));
