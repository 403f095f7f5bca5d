// A small ACP v2 client on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0,
// entrypoint @agentclientprotocol/sdk/experimental/v2), for the client side of the suite.
//
// It launches its agent (the arguments after --, or one argument holding a whole command line such as
// the suite's {agent}), then: initialize, session/new with the absolute cwd, one text prompt, waits for
// the idle state that ends the turn (ACP_CLIENT_PROMPTS prompts, default 1), session/close, and ends the agent's stdin. Permission requests get
// the first allow option; other agent requests are left to the SDK (its own -32601 / -32602 answers).
//
// Run: node tests/interop/ts/client.mjs -- AGENT ARGS...

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";

function split(line) {
  // enough of POSIX shell quoting for a command line made by Python's shlex.join
  const out = [];
  let cur = "", quote = null, any = false;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = null; else cur += ch;
    } else if (ch === "'" || ch === '"') { quote = ch; any = true; }
    else if (/\s/.test(ch)) { if (cur || any) out.push(cur); cur = ""; any = false; }
    else cur += ch;
  }
  if (cur || any) out.push(cur);
  return out;
}

const rest = process.argv.slice(process.argv.indexOf("--") + 1);
const argv = rest.length === 1 ? split(rest[0]) : rest;
const agentProcess = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => agentProcess.on("exit", resolve));

let turnOver = () => {};
const app = client({ name: "interop-ts-client" })
  .onRequest("session/request_permission", ({ params }) => {
    const allow = params.options.find((o) => String(o.kind).startsWith("allow"));
    return { outcome: allow ? { outcome: "selected", optionId: allow.optionId } : { outcome: "cancelled" } };
  })
  .onNotification("session/update", ({ params }) => {
    if (params.update.sessionUpdate === "state_update" && params.update.state === "idle") turnOver();
  });

const stream = ndJsonStream(Writable.toWeb(agentProcess.stdin), Readable.toWeb(agentProcess.stdout));
let code = 0;
try {
  await app.connectWith(stream, async (ctx) => {
    await ctx.request("initialize", {
      protocolVersion: 2,
      info: { name: "interop-ts-client", version: "0.1.0" },
      capabilities: {},
    });
    const { sessionId } = await ctx.request("session/new", { cwd: process.cwd() });
    const prompts = Number(process.env.ACP_CLIENT_PROMPTS || "1");
    for (let n = 0; n < prompts; n++) {
      let idle = new Promise((resolve) => (turnOver = resolve));
      try {
        await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Say hello" }] });
      } catch (e) {
        console.error("interop-ts-client: session/prompt failed:", e?.message ?? e);
        continue; // a failed request is a failure of that request only
      }
      await Promise.race([idle, new Promise((resolve) => setTimeout(resolve, 10000))]);
    }
    await ctx.request("session/close", { sessionId }).catch(() => {});
  });
} catch (e) {
  console.error("interop-ts-client:", e?.message ?? e);
  code = 1;
}
agentProcess.stdin.end();
await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3000))]);
process.exit(code);
