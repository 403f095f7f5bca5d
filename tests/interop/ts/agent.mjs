// A small ACP v2 agent on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0,
// entrypoint @agentclientprotocol/sdk/experimental/v2).
//
// It mirrors the app-level behaviour of acp_conformance/reference/agent/ as far as the SDK lets
// application code do it (see docs/interop.md): the SDK owns framing, routing, params validation,
// version negotiation and the JSON-RPC error codes; this file owns sessions, the user_message
// echo with a messageId, state updates, the "slowly" long turn and the "fail" turn, cancel,
// resume with and without replay, close and list. Sessions persist as JSON files in ./.interop-agent/sessions/.
//
// Run: node tests/interop/ts/agent.mjs

import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { agent, ndJsonStream, RequestError } from "@agentclientprotocol/sdk/experimental/v2";

const STATE_DIR = path.join(process.cwd(), ".interop-agent", "sessions");
const newId = (prefix) => prefix + randomBytes(12).toString("hex");
// An already-aborted signal never fires "abort" again: check it first (the SDK aborts a request's
// signal as soon as $/cancel_request arrives, which can be before its handler first sleeps).
const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
const notFound = (sessionId) => new RequestError(-32002, "Session not found", { sessionId });

const sessions = new Map(); // sessionId -> {record, turn: {abort, done} | null, held: [AbortController]}

function save(session) {
  session.record.updatedAt = new Date().toISOString();
  fs.mkdirSync(STATE_DIR, { recursive: true });
  fs.writeFileSync(path.join(STATE_DIR, session.record.sessionId + ".json"), JSON.stringify(session.record));
}

function load(sessionId) {
  const file = path.join(STATE_DIR, sessionId + ".json");
  if (sessionId.includes("/") || !fs.existsSync(file)) return null;
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

function live(sessionId) {
  const session = sessions.get(sessionId);
  if (!session) throw notFound(sessionId);
  return session;
}

const update = (client, session, u) =>
  client.notify("session/update", { sessionId: session.record.sessionId, update: u });

async function runTurn(client, session, text) {
  const abort = new AbortController();
  let finish;
  session.turn = { abort, done: new Promise((r) => (finish = r)) };
  const agentId = newId("msg_");
  const chunks = [];
  let stopReason = "end_turn";
  let error;
  try {
    await update(client, session, { sessionUpdate: "state_update", state: "running" });
    if (text.toLowerCase().includes("fail")) throw new Error("Simulated failure: the prompt asked to fail");
    const slow = text.toLowerCase().includes("slowly");
    const parts = slow ? Array.from({ length: 60 }, (_, i) => `${i + 1} `) : ["You said: ", text];
    for (const part of parts) {
      chunks.push(part);
      await update(client, session, {
        sessionUpdate: "agent_message_chunk", messageId: agentId, content: { type: "text", text: part },
      });
      await sleep(slow ? 100 : 10, abort.signal);
    }
  } catch (e) {
    if (abort.signal.aborted) stopReason = "cancelled";
    else [stopReason, error] = ["error", { code: -32603, message: e.message }];
  }
  session.record.history.push({
    sessionUpdate: "agent_message", messageId: agentId, content: [{ type: "text", text: chunks.join("") }],
  });
  save(session);
  session.turn = null;
  await update(client, session, { sessionUpdate: "state_update", state: "idle", stopReason, ...(error ? { error } : {}) });
  finish();
}

async function stopSession(session) {
  for (const held of session.held.splice(0)) held.abort();
  if (session.turn) {
    session.turn.abort.abort();
    await session.turn.done;
  }
}

const app = agent({ name: "interop-ts-agent" })
  // The SDK negotiates the protocol version itself (>= 2 -> 2, < 2 -> -32022).
  .onRequest("initialize", () => ({
    protocolVersion: 2,
    info: { name: "interop-ts-agent", version: "0.1.0" },
    capabilities: { session: {} },
  }))
  .onRequest("session/new", ({ params }) => {
    if (!path.isAbsolute(params.cwd)) throw RequestError.invalidParams(undefined, "cwd must be an absolute path");
    if (params.mcpServers?.length) throw RequestError.invalidParams(undefined, "MCP servers are not supported");
    const session = { record: { sessionId: newId("sess_"), cwd: params.cwd, history: [] }, turn: null, held: [] };
    save(session);
    sessions.set(session.record.sessionId, session);
    return { sessionId: session.record.sessionId, configOptions: [] };
  })
  .onRequest("session/list", ({ params }) => {
    if (params.cursor != null) throw RequestError.invalidParams(undefined, "invalid cursor");
    const names = fs.existsSync(STATE_DIR) ? fs.readdirSync(STATE_DIR).sort() : [];
    const records = names.filter((n) => n.endsWith(".json")).map((n) => load(n.slice(0, -5)));
    return {
      sessions: records
        .filter((r) => r && (params.cwd == null || r.cwd === params.cwd))
        .map(({ sessionId, cwd, title, updatedAt }) => ({ sessionId, cwd, ...(title ? { title } : {}), updatedAt })),
    };
  })
  .onRequest("session/close", async ({ params }) => {
    const session = sessions.get(params.sessionId);
    sessions.delete(params.sessionId);
    if (session) await stopSession(session);
    return {};
  })
  .onRequest("session/set_config_option", ({ params }) => {
    live(params.sessionId);
    throw RequestError.invalidParams(undefined, "this agent has no config options");
  })
  .onRequest("session/resume", async ({ params, client }) => {
    if (!path.isAbsolute(params.cwd)) throw RequestError.invalidParams(undefined, "cwd must be an absolute path");
    if (params.mcpServers?.length) throw RequestError.invalidParams(undefined, "MCP servers are not supported");
    const replay = params.replayFrom ?? null;
    if (replay !== null && replay.type !== "start") throw RequestError.invalidParams(undefined, "unsupported replayFrom");
    let session = sessions.get(params.sessionId);
    if (!session) {
      const record = load(params.sessionId);
      if (!record) throw notFound(params.sessionId);
      session = { record, turn: null, held: [] };
      sessions.set(params.sessionId, session);
    }
    if (replay !== null) {
      for (const entry of session.record.history) await update(client, session, entry);
      await update(client, session, { sessionUpdate: "replay_complete" });
    }
    await update(client, session, { sessionUpdate: "state_update", state: session.turn ? "running" : "idle" });
    return { configOptions: [] };
  })
  .onRequest("session/prompt", async ({ params, client, signal }) => {
    const session = live(params.sessionId);
    const blocks = params.prompt;
    if (!blocks.length || blocks.some((b) => b.type !== "text" && b.type !== "resource_link")) {
      throw RequestError.invalidParams(undefined, "unsupported or empty prompt content");
    }
    // One turn at a time: a prompt that arrives while a turn runs waits, unanswered, for its end.
    const held = new AbortController();
    session.held.push(held);
    try {
      while (session.turn || session.held[0] !== held) {
        await sleep(20, AbortSignal.any([held.signal, signal]));
      }
    } catch {
      throw new RequestError(-32800, "Request cancelled");
    } finally {
      const i = session.held.indexOf(held);
      if (i >= 0) session.held.splice(i, 1);
    }
    const messageId = newId("msg_");
    const userMessage = { sessionUpdate: "user_message", messageId, content: blocks };
    session.record.history.push(userMessage);
    session.record.title ??= blocks.map((b) => b.text ?? "").join(" ").slice(0, 60);
    save(session);
    await update(client, session, userMessage);
    const text = blocks.filter((b) => b.type === "text").map((b) => b.text).join("\n");
    // The SDK writes the response when this handler returns; the turn starts on the next tick.
    setImmediate(() => runTurn(client, session, text).catch((e) => console.error("turn failed", e)));
    return { messageId };
  })
  .onNotification("session/cancel", async ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (session) await stopSession(session);
  });

const connection = app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
