// A small ACP v2 client on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0,
// entrypoint @agentclientprotocol/sdk/experimental/v2), for the client side of the suite.
//
// It mirrors acp_conformance/reference/client.py as far as the SDK lets application code do it
// (see docs/interop.md): it launches its agent, then initialize (protocol version 2,
// capabilities.elicitation.form), disconnects if the agent chose another version, session/new with
// the absolute cwd (auth/login with an advertised `agent` method when session/new answers -32000),
// one or more text prompts, each waiting for its response and the idle state that ends the turn,
// session/close, and it ends the agent's stdin. The SDK owns framing, ids, routing, params
// validation and the answers to methods this file does not handle (-32601).
//
// Requests from the agent: session/request_permission gets the first allow option (`cancelled` once
// this client cancelled the turn, or when $/cancel_request names it); a form elicitation/create is
// declined, any other mode gets -32602. Unknown updates are ignored.
//
// Steered like the reference client, by the environment: ACP_CLIENT_PROMPT, ACP_CLIENT_PROMPTS,
// ACP_CLIENT_CANCEL_AFTER (send session/cancel S seconds after each prompt), ACP_CLIENT_PERMISSION
// (allow|reject|cancelled|hold: hold = the user has not decided, answered `cancelled` when the turn
// is cancelled or over), ACP_CLIENT_LIST=1 (page through session/list), ACP_CLIENT_RESUME=1 (resume
// the first listed session), ACP_CLIENT_SET_CONFIG=1 (set each select/boolean option once),
// ACP_CLIENT_CANCEL_TOOLS=1 (tool_call/cancel every tool call that advertises capabilities.cancel),
// ACP_CLIENT_REQUEST_TIMEOUT (a request unanswered after S seconds gets $/cancel_request; its answer
// is still awaited), ACP_CLIENT_TIMEOUT (default 20).
//
// Run: node tests/interop/ts/client.mjs [--] AGENT ARGS...   (one argument = a whole command line)

import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream, RequestError } from "@agentclientprotocol/sdk/experimental/v2";

const env = process.env;
const num = (v, d) => (v === undefined || v === "" ? d : Number(v));
const opts = {
  prompt: env.ACP_CLIENT_PROMPT || "Say hello",
  prompts: num(env.ACP_CLIENT_PROMPTS, 1),
  cancelAfter: num(env.ACP_CLIENT_CANCEL_AFTER, null),
  permission: env.ACP_CLIENT_PERMISSION || "allow",
  list: env.ACP_CLIENT_LIST === "1",
  resume: env.ACP_CLIENT_RESUME === "1",
  setConfig: env.ACP_CLIENT_SET_CONFIG === "1",
  cancelTools: env.ACP_CLIENT_CANCEL_TOOLS === "1",
  requestTimeout: num(env.ACP_CLIENT_REQUEST_TIMEOUT, null),
  timeout: num(env.ACP_CLIENT_TIMEOUT, 20),
};
const log = (...a) => console.error("[interop-ts-client]", ...a);
const sleep = (s) => new Promise((resolve) => setTimeout(resolve, s * 1000));

function split(line) {
  // enough of POSIX shell quoting for a command line made by Python's shlex.join
  const out = [];
  let cur = "", quote = null, any = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quote === "'") {
      if (ch === "'") quote = null; else cur += ch;
    } else if (quote === '"') {
      if (ch === '"') quote = null;
      else if (ch === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) cur += line[++i];
      else cur += ch;
    } else if (ch === "'" || ch === '"') { quote = ch; any = true; }
    else if (ch === "\\" && i + 1 < line.length) { cur += line[++i]; any = true; }
    else if (/\s/.test(ch)) { if (cur || any) out.push(cur); cur = ""; any = false; }
    else cur += ch;
  }
  if (cur || any) out.push(cur);
  return out;
}

let argv = process.argv.slice(2);
if (argv[0] === "--") argv = argv.slice(1);
if (argv.length === 1 && !fs.existsSync(argv[0])) argv = split(argv[0]); // the suite's {agent}
if (!argv.length) {
  log("usage: node client.mjs [--] AGENT ARGS...");
  process.exit(2);
}
const agentProcess = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => agentProcess.on("exit", resolve));
agentProcess.on("error", (e) => log("cannot start the agent:", e.message));
agentProcess.stdin.on("error", () => {}); // EPIPE once the agent is gone: the SDK sees the close

// -- state shared by the handlers and the conversation ----------------------------------------------
let currentSession = null;
let turnOver = () => {};
const cancelledSessions = new Set();
const held = new Map(); // sessionId -> Set of resolvers of held permission requests
const cancelledTools = new Set();
let conn = null; // the ClientContext, once connected

function releaseHeld(sessionId) {
  for (const resolve of held.get(sessionId) ?? []) resolve();
  held.delete(sessionId);
}

function permissionOutcome(params) {
  if (cancelledSessions.has(params.sessionId) || opts.permission === "cancelled") return { outcome: "cancelled" };
  const want = opts.permission === "allow" ? "allow" : "reject";
  const chosen = (params.options ?? []).find((o) => String(o.kind ?? "").startsWith(want));
  return chosen ? { outcome: "selected", optionId: chosen.optionId } : { outcome: "cancelled" };
}

const app = client({ name: "interop-ts-client" })
  .onRequest("session/request_permission", async ({ params, signal }) => {
    if (opts.permission === "hold" && !cancelledSessions.has(params.sessionId) && !signal.aborted) {
      // the user has not decided yet: answered `cancelled` when the turn is cancelled or over,
      // or when the agent withdraws the request ($/cancel_request aborts `signal`)
      await new Promise((resolve) => {
        if (!held.has(params.sessionId)) held.set(params.sessionId, new Set());
        held.get(params.sessionId).add(resolve);
        signal.addEventListener("abort", resolve, { once: true });
      });
      return { outcome: { outcome: "cancelled" } };
    }
    if (signal.aborted) return { outcome: { outcome: "cancelled" } };
    return { outcome: permissionOutcome(params) };
  })
  .onRequest("elicitation/create", ({ params }) => {
    if (params.mode === "form") return { action: "decline" };
    throw new RequestError(-32602, `Elicitation mode ${JSON.stringify(params.mode)} is not supported`);
  })
  .onNotification("session/update", ({ params }) => {
    const u = params.update ?? {};
    if (u.sessionUpdate === "state_update" && u.state === "idle" && params.sessionId === currentSession) turnOver();
    else if (u.sessionUpdate === "tool_call_update" && opts.cancelTools && u.capabilities?.cancel != null
             && !cancelledTools.has(u.toolCallId)) {
      cancelledTools.add(u.toolCallId);
      conn?.request("tool_call/cancel", { sessionId: params.sessionId, toolCallId: u.toolCallId })
        .catch((e) => log("tool_call/cancel failed:", e?.message ?? e));
    }
    // anything else (unknown variants included) would be shown generically by a real client
  });

// A request that, with ACP_CLIENT_REQUEST_TIMEOUT, gets $/cancel_request when it is slow (the SDK sends it
// when the signal aborts) and whose one answer is still awaited.
function request(ctx, method, params) {
  if (opts.requestTimeout == null || opts.requestTimeout >= opts.timeout) return ctx.request(method, params);
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), opts.requestTimeout * 1000);
  return ctx.request(method, params, { cancellationSignal: abort.signal }).finally(() => clearTimeout(timer));
}

async function newSession(ctx, init) {
  const params = { cwd: path.resolve(process.cwd()) };
  try {
    return await request(ctx, "session/new", params);
  } catch (e) {
    const methods = (init.authMethods ?? []).filter((m) => m?.type === "agent" && typeof m.methodId === "string");
    if (e?.code !== -32000 || !methods.length) throw e;
    await request(ctx, "auth/login", { methodId: methods[0].methodId });
    return await request(ctx, "session/new", params);
  }
}

async function listSessions(ctx) {
  const sessions = [];
  let cursor;
  for (let page = 0; page < 20; page++) {
    const res = (await request(ctx, "session/list", page === 0 ? {} : { cursor })) ?? {};
    sessions.push(...(res.sessions ?? []));
    if (res.nextCursor == null) break; // missing or null: the last page ("" is a real cursor)
    cursor = res.nextCursor;
  }
  return sessions;
}

async function setConfig(ctx, sessionId, options) {
  for (const opt of options ?? []) {
    let value;
    if (opt?.type === "select") {
      const values = (opt.options ?? []).map((o) => o?.value).filter((v) => v !== undefined);
      if (!values.length) continue;
      value = { type: "id", value: values[values.length - 1] };
    } else if (opt?.type === "boolean") {
      value = { type: "boolean", value: !opt.currentValue };
    } else continue; // an option type this client does not know is never set
    try {
      await request(ctx, "session/set_config_option", { sessionId, configId: opt.configId, ...value });
    } catch (e) {
      log(`set_config_option ${opt.configId} failed:`, e?.message ?? e);
    }
  }
}

async function cancel(ctx, sessionId) {
  cancelledSessions.add(sessionId);
  await ctx.notify("session/cancel", { sessionId });
  releaseHeld(sessionId);
}

async function promptTurn(ctx, sessionId, n) {
  const idle = new Promise((resolve) => (turnOver = () => resolve("idle")));
  const text = n === 0 ? opts.prompt : `${opts.prompt} (${n + 1})`;
  let canceller = null;
  if (opts.cancelAfter != null) {
    canceller = setTimeout(() => cancel(ctx, sessionId).catch(() => {}), opts.cancelAfter * 1000);
  }
  let ok = true;
  try {
    await request(ctx, "session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  } catch (e) {
    log("session/prompt failed:", e?.message ?? e); // a failed request is a failure of that request only
    ok = false;
  }
  if (ok) {
    const gone = exited.then(() => "gone");
    const how = await Promise.race([idle, gone, sleep(opts.timeout).then(() => "timeout")]);
    if (how === "timeout") log("the turn did not end in time");
  }
  if (canceller) clearTimeout(canceller);
  releaseHeld(sessionId); // nothing is left unanswered once the turn is over
  cancelledSessions.delete(sessionId);
}

let code = 0;
try {
  await app.connectWith(ndJsonStream(Writable.toWeb(agentProcess.stdin), Readable.toWeb(agentProcess.stdout)), async (ctx) => {
    conn = ctx;
    let init;
    try {
      init = await request(ctx, "initialize", {
        protocolVersion: 2,
        info: { name: "interop-ts-client", version: "0.1.0" },
        capabilities: { elicitation: { form: {} } },
      });
    } catch (e) {
      log("initialize failed:", e?.message ?? e);
      return;
    }
    if (init?.protocolVersion !== 2) {
      log(`the agent chose protocol version ${JSON.stringify(init?.protocolVersion)}; this client speaks only 2: disconnecting`);
      return;
    }
    let created;
    try {
      created = await newSession(ctx, init);
    } catch (e) {
      log("session/new failed:", e?.message ?? e);
      return;
    }
    const sessionId = created.sessionId;
    currentSession = sessionId;
    if (opts.list) {
      const listed = await listSessions(ctx);
      if (opts.resume && typeof listed[0]?.sessionId === "string") {
        await request(ctx, "session/resume", { sessionId: listed[0].sessionId, cwd: listed[0].cwd })
          .catch((e) => log("session/resume failed:", e?.message ?? e));
      }
    }
    if (opts.setConfig) await setConfig(ctx, sessionId, created.configOptions);
    for (let n = 0; n < opts.prompts; n++) await promptTurn(ctx, sessionId, n);
    // the SDK resolves a -32002 answer to session/close with {} (closing is idempotent)
    await request(ctx, "session/close", { sessionId }).catch((e) => log("session/close failed:", e?.message ?? e));
  });
} catch (e) {
  log("the connection ended:", e?.message ?? e);
  code = 1;
}
agentProcess.stdin.end();
if ((await Promise.race([exited.then(() => true), sleep(5)])) !== true) agentProcess.kill("SIGTERM");
process.exit(code);
