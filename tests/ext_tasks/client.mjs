// The official tasks client against a running clawmcp reference example
// over Streamable HTTP at the 2026-07-28 revision:
//   node client.mjs http://127.0.0.1:PORT/mcp
// The TypeScript v2 client negotiates 2026-07-28 (server/discover); the
// @modelcontextprotocol/ext-tasks session drives the tasks: it declares the
// extension in each request's _meta, polls tasks/get, answers a task's
// questions with tasks/update and cancels with tasks/cancel. Its
// `rawDispatch` is the host's own HTTP request path, which the package
// requires for a 2026-07-28 tasks server (the SDK's codecs do not carry
// task shapes); it sets the headers the revision asks for.
// Exits 0 when every check holds, 1 with the reason otherwise.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const url = process.argv[2];
if (!url) {
  console.error("usage: node client.mjs URL");
  process.exit(2);
}
const PROTOCOL = "2026-07-28";
const clientInfo = { name: "clawmcp-ext-tasks-check", version: "1.0.0" };
const clientCapabilities = { elicitation: { form: {} } };

let nextId = 1;
// One JSON-RPC request over HTTP, as the 2026-07-28 revision frames it: the
// method and its name (tool or task id) in headers too. The answer is JSON
// or an event stream whose last message with our id is the reply.
async function rawDispatch(request, options = {}) {
  const id = nextId++;
  const message = { jsonrpc: "2.0", id, method: request.method, params: request.params ?? {} };
  const name = message.params.name ?? message.params.taskId;
  // Header names are case-insensitive: the package's own context headers
  // (it repeats Mcp-Name on tasks/*) replace ours rather than doubling them.
  const headers = new Headers({
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": PROTOCOL,
    "mcp-method": message.method,
  });
  if (name !== undefined) headers.set("mcp-name", String(name));
  for (const [key, value] of Object.entries(options.context?.headers ?? {})) headers.set(key, value);
  if (process.env.TRACE) console.error(JSON.stringify([...headers]), JSON.stringify(message));
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(message), signal: options.signal });
  const text = await response.text();
  let reply;
  if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (!data) continue;
      const parsed = JSON.parse(data);
      if (parsed.id === id) reply = parsed;
    }
  } else if (text) {
    reply = JSON.parse(text);
  }
  if (!reply) throw new Error(`no reply to ${message.method} (HTTP ${response.status})`);
  return reply.error ? { kind: "error", error: reply.error } : { kind: "result", result: reply.result };
}

function check(condition, what, seen) {
  if (!condition) throw new Error(`FAIL: ${what}${seen === undefined ? "" : ` (saw ${seen})`}`);
  console.log(`ok: ${what}`);
}

const client = new Client(clientInfo, {
  capabilities: clientCapabilities,
  versionNegotiation: { mode: { pin: PROTOCOL } },
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
check(client.getProtocolEra() === "modern", "the client negotiated the 2026-07-28 revision");
check(
  client.getServerCapabilities()?.extensions?.["io.modelcontextprotocol/tasks"] !== undefined,
  "server/discover advertises io.modelcontextprotocol/tasks under capabilities.extensions",
);

const questions = [];
const session = createTaskSessionFromClient(client, {
  endpointId: url,
  rawDispatch,
  v2RequestFraming: { protocolVersion: PROTOCOL, clientInfo, clientCapabilities },
  onInputRequest: async (request, context) => {
    questions.push({ request, context });
    if (request.kind !== "elicitation") throw new Error(`unexpected ${request.kind} request`);
    return { action: "accept", content: { yes: true } };
  },
});

try {
  // 1. An optional-task tool runs as a task to completion.
  const sleep = await session.callTool("sleep", { ms: 300 }, { task: { preference: "require" } });
  check(sleep.kind === "task", "sleep became a task (CreateTaskResult)");
  const events = [];
  const { outcome } = await sleep.settle({ onEvent: (event) => events.push(event) });
  check(outcome.status === "completed", "the sleep task completed", `${outcome.status} ${outcome.error?.message ?? ""}`);
  const slept = resultFromTaskOutcome(outcome);
  check(slept.structuredContent?.sleptMs === 300, "its result is the tool's own: {sleptMs: 300}");

  // 2. A task that asks: input_required, answered through tasks/update,
  //    the same running tool resumes and completes with the answer.
  const ask = await session.callTool("ask", { question: "Ship it?" }, { task: { preference: "require" } });
  check(ask.kind === "task", "ask became a task");
  const asked = await ask.settle();
  check(questions.length === 1, "the task's question reached the client once");
  check(questions[0].context.delivery === "task-update", "it was answered with tasks/update");
  check(asked.outcome.status === "completed", "the ask task completed", asked.outcome.status);
  const answer = resultFromTaskOutcome(asked.outcome);
  check(
    answer.structuredContent?.action === "accept" && answer.structuredContent?.yes === true,
    "its result carries the answer: {action: accept, yes: true}",
    JSON.stringify(answer.structuredContent),
  );

  // 3. A long task cancelled: tasks/cancel stops the work, the task ends cancelled.
  const long = await session.callTool("sleep", { ms: 60000 }, { task: { preference: "require" } });
  check(long.kind === "task", "a 60 s sleep became a task");
  await long.cancel();
  const cancelled = await long.result();
  check(cancelled.status === "cancelled", "the cancelled task ended cancelled", cancelled.status);
} finally {
  await session.close();
  await client.close();
}
console.log("the official tasks client: every check passed");
