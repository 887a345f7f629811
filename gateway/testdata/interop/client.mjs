// client.mjs drives a sandgate gateway with the official MCP TypeScript SDK,
// as an independent second client next to the Go tests' mcp-go.
//
//	node client.mjs http://127.0.0.1:PORT/mcp
//
// It prints one JSON object with what it observed and exits non-zero when
// any check failed or the whole run took longer than its deadline. The Go
// side (gateway/interop_test.go) decodes that object and asserts on it, so
// the checks here only guard the steps that later steps depend on.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

// deadlineMs bounds the whole run; requestTimeoutMs bounds one request.
const deadlineMs = 90_000;
const requestTimeoutMs = 30_000;

const observed = {
  sdkVersion: sdkVersion(),
  protocolVersion: null,
  serverInfo: null,
  sessionId: null,
  tools: [],
  fileRoundTrip: null,
  shell: null,
  code: null,
  logMessages: [],
  http: [],
  transportErrors: [],
  terminated: false,
  closed: false,
  failures: [],
};

function sdkVersion() {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('@modelcontextprotocol/sdk/client/index.js');
  // .../node_modules/@modelcontextprotocol/sdk/dist/cjs/client/index.js
  const pkg = join(dirname(entry), '..', '..', '..', 'package.json');
  return JSON.parse(readFileSync(pkg, 'utf8')).version;
}

function check(ok, message) {
  if (!ok) {
    observed.failures.push(message);
  }
  return ok;
}

function finish(code) {
  process.stdout.write(JSON.stringify(observed, null, 2) + '\n', () => process.exit(code));
}

// loggingFetch records each HTTP exchange the transport makes (method,
// status, content type, protocol header), so the Go side can see the
// DELETE and any stream the gateway refused.
function loggingFetch(start) {
  return async (url, init = {}) => {
    const headers = new Headers(init.headers);
    const entry = {
      method: init.method ?? 'GET',
      protocolHeader: headers.get('mcp-protocol-version'),
      withSession: headers.has('mcp-session-id'),
      atMs: Date.now() - start,
    };
    observed.http.push(entry);
    try {
      const res = await fetch(url, init);
      entry.status = res.status;
      entry.contentType = res.headers.get('content-type');
      return res;
    } catch (err) {
      entry.error = String(err);
      throw err;
    }
  };
}

function firstText(result) {
  return (result.content ?? []).find((c) => c.type === 'text')?.text ?? '';
}

async function listTools(client) {
  const { tools } = await client.listTools(undefined, { timeout: requestTimeoutMs });
  observed.tools = tools.map((t) => t.name).sort();
  for (const name of ['run_shell', 'run_code', 'read_file', 'write_file']) {
    check(observed.tools.includes(name), `tools/list lacks ${name}`);
  }
}

async function fileRoundTrip(client) {
  const content = 'hello from the TypeScript SDK\nsecond line: \u00e9\u00e8\u2713\n';
  const w = await client.callTool(
    { name: 'write_file', arguments: { path: 'interop/hello.txt', content } },
    undefined,
    { timeout: requestTimeoutMs },
  );
  const r = await client.callTool(
    { name: 'read_file', arguments: { path: '/workspace/interop/hello.txt' } },
    undefined,
    { timeout: requestTimeoutMs },
  );
  observed.fileRoundTrip = {
    written: content,
    read: firstText(r),
    writeIsError: Boolean(w.isError),
    readIsError: Boolean(r.isError),
  };
  check(!w.isError && !r.isError && firstText(r) === content, 'write_file/read_file round trip differs');
}

// shellWithProgress runs a command whose output comes in two parts a second
// apart and records every progress notification with its arrival time, so
// the Go side can tell streamed output from output sent at the end.
async function shellWithProgress(client) {
  const progress = [];
  const start = Date.now();
  const res = await client.callTool(
    { name: 'run_shell', arguments: { command: 'echo one; sleep 1; echo two' } },
    undefined,
    {
      timeout: requestTimeoutMs,
      onprogress: (p) => progress.push({ ...p, atMs: Date.now() - start }),
    },
  );
  observed.shell = {
    isError: Boolean(res.isError),
    text: firstText(res),
    structured: res.structuredContent ?? null,
    progress,
    resultAtMs: Date.now() - start,
  };
  check(!res.isError, `run_shell isError: ${firstText(res)}`);
  check(progress.length > 0, 'run_shell sent no progress notification');
}

async function runCode(client) {
  const res = await client.callTool(
    { name: 'run_code', arguments: { language: 'python', code: 'import sys\nprint(sum(range(10)))\nprint("py", sys.version_info[0], file=sys.stderr)' } },
    undefined,
    { timeout: requestTimeoutMs },
  );
  const s = res.structuredContent ?? {};
  observed.code = { isError: Boolean(res.isError), text: firstText(res), structured: res.structuredContent ?? null };
  check(!res.isError, `run_code isError: ${firstText(res)}`);
  for (const [field, type] of [['exit_code', 'number'], ['stdout', 'string'], ['stderr', 'string'], ['duration_ms', 'number'], ['timed_out', 'boolean'], ['oom_killed', 'boolean']]) {
    check(typeof s[field] === type, `run_code structuredContent.${field} is ${typeof s[field]}, want ${type}`);
  }
}

async function main() {
  const url = process.argv[2];
  if (!url) {
    observed.failures.push('usage: node client.mjs MCP_URL');
    return finish(2);
  }
  setTimeout(() => {
    observed.failures.push(`deadline of ${deadlineMs} ms exceeded`);
    finish(3);
  }, deadlineMs).unref();

  const start = Date.now();
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: loggingFetch(start) });
  // Set before connect: the SDK chains a handler it finds there. Errors
  // after close begins are the SDK reporting its own abort of the GET
  // stream, not anything the gateway did.
  let closing = false;
  transport.onerror = (err) => {
    if (!closing) {
      observed.transportErrors.push(String(err));
    }
  };
  const client = new Client({ name: 'sandgate-interop-ts', version: '1.0.0' }, { capabilities: {} });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    observed.logMessages.push({ level: n.params.level, logger: n.params.logger ?? null, data: n.params.data });
  });

  try {
    await client.connect(transport, { timeout: requestTimeoutMs });
    observed.protocolVersion = transport.protocolVersion ?? null;
    observed.serverInfo = client.getServerVersion() ?? null;
    observed.sessionId = transport.sessionId ?? null;
    if (client.getServerCapabilities()?.logging) {
      await client.setLoggingLevel('info', { timeout: requestTimeoutMs });
    }

    await listTools(client);
    await fileRoundTrip(client);
    await shellWithProgress(client);
    await runCode(client);

    if (transport.sessionId) {
      await transport.terminateSession();
      observed.terminated = true;
    }
  } catch (err) {
    observed.failures.push(`${err?.name ?? 'Error'}: ${err?.message ?? err}`);
  } finally {
    closing = true;
    try {
      await client.close();
      observed.closed = true;
    } catch (err) {
      observed.failures.push(`close: ${err?.message ?? err}`);
    }
  }
  finish(observed.failures.length === 0 ? 0 : 1);
}

main();
