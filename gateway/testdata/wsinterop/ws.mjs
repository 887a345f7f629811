// ws.mjs drives a sandgate gateway's /mcp/ws with the official MCP
// TypeScript SDK's WebSocketClientTransport, unmodified:
//
//	node ws.mjs ws://127.0.0.1:PORT/mcp/ws [TOKEN]
//
// The transport opens `new WebSocket(url, "mcp")` and has no way to set
// a header. With a token, the global WebSocket is Node's own (undici)
// given the token the way undici allows, in its init object's headers;
// the SDK's code is untouched. It prints one JSON object with what it
// observed; the Go side (gateway/mcpws_interop_test.go) asserts on it.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';

const [url, token] = process.argv.slice(2);
const deadlineMs = 60_000;

const observed = {
  protocolVersion: null,
  serverName: null,
  tools: [],
  written: null,
  read: null,
  shell: null,
  progress: [],
  closed: false,
  errors: [],
};

function finish(code) {
  process.stdout.write(JSON.stringify(observed, null, 2) + '\n', () => process.exit(code));
}

setTimeout(() => {
  observed.errors.push(`deadline of ${deadlineMs} ms passed`);
  finish(2);
}, deadlineMs).unref();

if (token) {
  const NodeWebSocket = globalThis.WebSocket;
  globalThis.WebSocket = class extends NodeWebSocket {
    constructor(u, protocols) {
      super(u, { protocols, headers: { Authorization: `Bearer ${token}` } });
    }
  };
}

try {
  const transport = new WebSocketClientTransport(new URL(url));
  transport.onerror = (e) => observed.errors.push(`transport: ${e?.message ?? e}`);
  const client = new Client({ name: 'sandgate-ws-interop', version: '1.0.0' });
  const closed = new Promise((resolve) => {
    client.onclose = () => { observed.closed = true; resolve(); };
  });
  await client.connect(transport);
  observed.serverName = client.getServerVersion()?.name ?? null;
  observed.protocolVersion = transport.protocolVersion ?? null;

  observed.tools = (await client.listTools()).tools.map((t) => t.name);

  const content = `written over WebSocket at ${new Date().toISOString()}`;
  const w = await client.callTool({ name: 'write_file', arguments: { path: 'ws.txt', content } });
  observed.written = w.isError ? null : content;
  const r = await client.callTool({ name: 'read_file', arguments: { path: 'ws.txt' } });
  observed.read = r.isError ? null : r.content?.[0]?.text ?? null;

  const s = await client.callTool(
    { name: 'run_shell', arguments: { command: 'echo one; sleep 1; echo two' } },
    undefined,
    { onprogress: (p) => observed.progress.push({ progress: p.progress, message: p.message ?? null }) },
  );
  observed.shell = { isError: !!s.isError, structured: s.structuredContent ?? null };

  await client.close();
  await closed; // the close handshake done
  finish(0);
} catch (e) {
  observed.errors.push(String(e?.stack ?? e));
  finish(1);
}
