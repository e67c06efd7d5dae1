// A minimal MCP Apps host, for headless chromium (drive.py): the
// TypeScript v2 client over Streamable HTTP, and ext-apps' AppBridge
// between it and the app page in a sandboxed iframe. Bundled by esbuild
// into build/host-bundle.js, loaded by host.html as
//   host.html?server=http://127.0.0.1:PORT/mcp&tool=echo&args={"message":"…"}
// (optional: &sandbox=… the iframe's sandbox, default allow-scripts;
// &protocol=2026-07-28 a revision to pin).
// It connects declaring the UI extension, lists the tools, follows the
// tool's _meta.ui.resourceUri, reads the page (text/html;profile=mcp-app),
// loads it in <iframe sandbox="allow-scripts"> and, once the page says it
// is initialized, calls the tool as the model would (with `args`) and
// hands the page the tool's input and result. The page's own tools/call
// go through the bridge to the server, refused when the tool is not
// visible to apps. Everything seen is kept on window.__host for the
// driver: the tool's tools/list entry, the page's listing and read
// contents, every message between host and page, every message to and
// from the server.
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const EXTENSION = "io.modelcontextprotocol/ui";
const hostInfo = { name: "clawmcp-apps-browser-host", version: "1.0.0" };

const record = {
  state: "starting",
  error: null,
  protocolVersion: null,
  serverCapabilities: null,
  tools: [],
  tool: null,
  resourceUri: null,
  listing: null,
  contents: null,
  modelCall: null,
  pageToHost: [],
  hostToPage: [],
  toServer: [],
  fromServer: [],
  appCalls: [],
};
window.__host = record;

const statusLine = document.getElementById("status");
function status(state, detail) {
  record.state = state;
  statusLine.textContent = detail ? `${state}: ${detail}` : state;
}

// JSON copies: what the driver reads is what was on the wire.
const copy = (value) => JSON.parse(JSON.stringify(value ?? null));

async function main() {
  const query = new URLSearchParams(location.search);
  const server = new URL(query.get("server"));
  const toolName = query.get("tool") ?? "echo";
  const modelArgs = JSON.parse(query.get("args") ?? "{}");
  const sandbox = query.get("sandbox") ?? "allow-scripts";

  // The server's side: every message both ways, at the transport.
  const transport = new StreamableHTTPClientTransport(server);
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    record.toServer.push(copy(message));
    return send(message, options);
  };
  // A revision to pin (e.g. 2026-07-28, stateless: the capabilities go
  // with each request), else the client's own negotiation.
  const pin = query.get("protocol");
  const client = new Client(hostInfo, {
    capabilities: { extensions: { [EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
    ...(pin ? { versionNegotiation: { mode: { pin } } } : {}),
  });
  await client.connect(transport);
  // The client set its handler on connect; what reaches it passes here
  // first (the initialize result came before: the capabilities below).
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    record.fromServer.push(copy(message));
    deliver(message, extra);
  };
  record.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null;
  record.serverCapabilities = copy(client.getServerCapabilities());

  const { tools } = await client.listTools();
  record.tools = copy(tools);
  const tool = tools.find((t) => t.name === toolName);
  if (!tool) throw new Error(`no tool ${toolName} in tools/list`);
  record.tool = copy(tool);
  const uri = getToolUiResourceUri(tool); // throws unless ui://
  if (!uri) throw new Error(`${toolName} links no app page`);
  record.resourceUri = uri;

  const { resources } = await client.listResources();
  record.listing = copy(resources.find((r) => r.uri === uri) ?? null);
  const { contents } = await client.readResource({ uri });
  record.contents = copy(contents);
  const page = contents.find((c) => c.uri === uri) ?? contents[0];
  if (!page) throw new Error(`resources/read ${uri} returned no contents`);
  if (page.mimeType !== RESOURCE_MIME_TYPE) {
    throw new Error(`${uri} is ${page.mimeType}, not ${RESOURCE_MIME_TYPE}`);
  }
  const html = page.text ?? new TextDecoder().decode(Uint8Array.from(atob(page.blob), (c) => c.charCodeAt(0)));

  // The page: an opaque origin (no allow-same-origin), scripts allowed.
  const iframe = document.createElement("iframe");
  iframe.id = "app";
  iframe.setAttribute("sandbox", sandbox);
  iframe.title = uri;
  document.body.appendChild(iframe);
  const view = iframe.contentWindow;
  window.addEventListener("message", (event) => {
    if (event.source === view) record.pageToHost.push(copy(event.data));
  });

  const bridge = new AppBridge(
    client,
    hostInfo,
    { serverTools: {}, serverResources: {}, logging: {} },
    { hostContext: { theme: "light", displayMode: "inline", toolInfo: { tool } } },
  );
  bridge.oninitialized = () => {
    status("initialized");
    modelTurn().catch(fail);
  };
  // The model's turn: the tool called as the model would, its input and
  // result handed to the page (only after the page is initialized).
  async function modelTurn() {
    const result = await client.callTool({ name: toolName, arguments: modelArgs });
    record.modelCall = copy({ arguments: modelArgs, result });
    await bridge.sendToolInput({ arguments: modelArgs });
    await bridge.sendToolResult(result);
    status("ready");
  }

  const pageTransport = new PostMessageTransport(view, view);
  const post = pageTransport.send.bind(pageTransport);
  pageTransport.send = (message, options) => {
    record.hostToPage.push(copy(message));
    return post(message, options);
  };
  await bridge.connect(pageTransport);

  // The bridge forwards the page's tools/call to the server; this host
  // first refuses tools not visible to apps (a host's duty), and keeps
  // what went through.
  const forward = bridge.oncalltool;
  bridge.oncalltool = undefined;
  bridge.oncalltool = async (params, extra) => {
    const target = tools.find((t) => t.name === params.name);
    const visibility = target?._meta?.ui?.visibility ?? ["model", "app"];
    const entry = { params: copy(params), result: null, refused: null };
    record.appCalls.push(entry);
    if (!target || !visibility.includes("app")) {
      entry.refused = `tool ${params.name} is not available to apps`;
      throw new Error(entry.refused);
    }
    const result = await forward(params, extra);
    entry.result = copy(result);
    return result;
  };

  // Only now the page: no message of it can come before the bridge listens.
  iframe.srcdoc = html;
  status("loading");
}

function fail(error) {
  record.error = String(error?.stack ?? error);
  status("error", String(error?.message ?? error));
  console.error(error);
}

main().catch(fail);
