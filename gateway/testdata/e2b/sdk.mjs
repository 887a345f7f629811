// Drives a Sandgate gateway with the unmodified E2B SDKs, pointed at it by
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY; E2B_OTHER_KEY belongs to
// another tenant. With SDK_CORE_ONLY=1 it drives e2b alone, without the
// code interpreter. Prints a JSON report; exits non-zero when a check
// failed.
import crypto from 'node:crypto'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import { CommandExitError } from 'e2b'

const coreOnly = process.env.SDK_CORE_ONLY === '1'
const { Sandbox } = coreOnly ? await import('e2b') : await import('@e2b/code-interpreter')
const require = createRequire(import.meta.url)
const report = {
  sdk: require('e2b/package.json').version,
  interpreterSdk: coreOnly ? '' : require('@e2b/code-interpreter/package.json').version,
  nestedSdk: (() => {
    const nested = new URL('./node_modules/@e2b/code-interpreter/node_modules/e2b/package.json', import.meta.url)
    return fs.existsSync(nested) ? JSON.parse(fs.readFileSync(nested, 'utf8')).version : ''
  })(),
  steps: [],
  failures: [],
}
const check = (ok, what, seen) => {
  report.steps.push(what)
  if (!ok) report.failures.push(`${what}: saw ${JSON.stringify(seen)}`)
}
const sha = (buf) => crypto.createHash('sha256').update(buf).digest('hex')

async function commands(sbx) {
  await sbx.files.makeDir('/workspace/sub')
  const r = await sbx.commands.run('echo "$GREETING from $(pwd)"; echo warn >&2', { envs: { GREETING: 'hi' }, cwd: '/workspace/sub' })
  check(r.exitCode === 0 && r.stdout === 'hi from /workspace/sub\n' && r.stderr === 'warn\n', 'run with envs and cwd', r)

  let exit
  try {
    await sbx.commands.run('exit 3')
  } catch (e) {
    exit = e instanceof CommandExitError ? e.exitCode : String(e)
  }
  check(exit === 3, 'a failing command throws CommandExitError with its exit code', exit)

  const chunks = []
  const long = await sbx.commands.run('for i in 1 2 3 4; do echo line$i; sleep 0.2; done', { onStdout: (d) => chunks.push(d) })
  check(long.stdout === 'line1\nline2\nline3\nline4\n' && chunks.length >= 2 && chunks.join('') === long.stdout,
    'a long command streams its output in several chunks', { chunks, stdout: long.stdout })

  const reader = await sbx.commands.run('read a; echo got:$a', { background: true, stdin: true })
  await sbx.commands.sendStdin(reader.pid, 'ping\n')
  const fed = await reader.wait()
  check(fed.stdout === 'got:ping\n', 'a background process reads what sendStdin sent', fed)

  const sleeper = await sbx.commands.run('sleep 60', { background: true })
  const listed = await sbx.commands.list()
  check(listed.some((p) => p.pid === sleeper.pid), 'commands.list shows a background process', listed)
  check(await sbx.commands.kill(sleeper.pid), 'commands.kill kills it', false)
}

async function files(sbx) {
  const info = await sbx.files.write('/workspace/hello.txt', 'hello world')
  check(info.path === '/workspace/hello.txt', 'files.write answers the path', info)
  check(await sbx.files.read('/workspace/hello.txt') === 'hello world', 'files.read reads it back', null)
  const entries = await sbx.files.list('/workspace')
  check(entries.some((e) => e.name === 'hello.txt' && e.type === 'file'), 'files.list lists it', entries)
  await sbx.files.rename('/workspace/hello.txt', '/workspace/sub/moved.txt')
  check(await sbx.files.exists('/workspace/sub/moved.txt') && !(await sbx.files.exists('/workspace/hello.txt')), 'files.rename moves it', null)
  await sbx.files.remove('/workspace/sub/moved.txt')
  check(!(await sbx.files.exists('/workspace/sub/moved.txt')), 'files.remove removes it', null)
  let missing
  try {
    await sbx.files.read('/workspace/nope.txt')
  } catch (e) {
    missing = e.name
  }
  check(missing === 'FileNotFoundError' || missing === 'NotFoundError', 'reading a missing file is not found', missing)
  await watch(sbx)

  const big = crypto.randomBytes(100 << 20)
  let t0 = performance.now()
  await sbx.files.write('/workspace/big.bin', big.buffer.slice(big.byteOffset, big.byteOffset + big.byteLength))
  report.uploadMs = Math.round(performance.now() - t0)
  t0 = performance.now()
  const back = await sbx.files.read('/workspace/big.bin', { format: 'bytes' })
  report.downloadMs = Math.round(performance.now() - t0)
  check(back.length === big.length && sha(back) === sha(big), '100 MiB upload and download keep every byte', { length: back.length })
  report.bigFileSha256 = sha(big)
}

// watchDir reports each change, a rename as RENAME of the old name and
// CREATE of the new, as envd does; waits by content, up to 60 s.
async function watch(sbx) {
  const want = ['create w1.txt', 'rename w1.txt', 'create w2.txt', 'remove w2.txt']
  const seen = []
  let done
  const all = new Promise((resolve) => { done = resolve })
  const inOrder = () => {
    let i = 0
    for (const s of seen) if (s === want[i]) i++
    return i === want.length
  }
  const handle = await sbx.files.watchDir('/workspace', (ev) => {
    seen.push(`${ev.type} ${ev.name}`)
    if (inOrder()) done()
  })
  await sbx.files.write('/workspace/w1.txt', 'x')
  await sbx.files.rename('/workspace/w1.txt', '/workspace/w2.txt')
  await sbx.files.remove('/workspace/w2.txt')
  await Promise.race([all, new Promise((resolve) => setTimeout(resolve, 60_000))])
  await handle.stop()
  check(inOrder(), 'files.watchDir reports create, rename and remove in order', seen)
}

async function code(sbx) {
  await sbx.runCode('x = 41')
  const sum = await sbx.runCode('print("side effect")\nx + 1')
  check(sum.text === '42' && sum.logs.stdout.join('') === 'side effect\n', 'runCode keeps state and returns the last expression', sum.toJSON())
  const chart = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 1, 9])\nplt.show()')
  const png = chart.results.find((r) => r.png)
  check(png && Buffer.from(png.png, 'base64').subarray(1, 4).toString() === 'PNG', 'runCode returns a matplotlib chart as PNG', chart.results.map((r) => r.formats()))
  await streamed(sbx)
  const err = await sbx.runCode('1 / 0')
  check(err.error && err.error.name === 'ZeroDivisionError' && err.error.traceback.includes('ZeroDivisionError'), 'runCode reports an error with name and traceback', err.error)
}

// streamed: runCode's onStdout sees a line while the cell still runs.
// The cell prints, then waits (up to 30 s, within the cell timeout) for
// a file that only the onStdout handler writes, then prints again; with
// output sent at the end, it would give up first.
async function streamed(sbx) {
  const seen = []
  let wrote
  const cell = await sbx.runCode(
    "import os, time\nprint('first')\nfor _ in range(300):\n    if os.path.exists('/workspace/gate'):\n        break\n    time.sleep(0.1)\nelse:\n    print('gave up')\nprint('second')",
    {
      onStdout: (m) => {
        seen.push(m.line)
        if (m.line === 'first\n') wrote = sbx.files.write('/workspace/gate', 'go')
      },
    })
  await wrote
  check(cell.logs.stdout.join('') === 'first\nsecond\n' && seen.join('') === 'first\nsecond\n',
    'runCode streams a line to onStdout while the cell runs', { stdout: cell.logs.stdout, seen })
}

async function lifecycle(sbx) {
  await sbx.setTimeout(120_000)
  const info = await sbx.getInfo()
  const left = info.endAt.getTime() - Date.now()
  check(left > 100_000 && left <= 121_000, 'setTimeout moves endAt', { endAt: info.endAt })

  const metrics = await Sandbox.getMetrics(sbx.sandboxId, { start: new Date(Date.now() - 60_000), end: new Date() })
  const m = metrics[0] ?? {}
  check(metrics.length === 1 && m.timestamp instanceof Date && Math.abs(m.timestamp - Date.now()) < 60_000 && m.cpuCount >= 1 &&
    m.cpuUsedPct >= 0 && m.cpuUsedPct <= 100 && m.memUsed > 0 && m.memTotal >= m.memUsed && m.diskUsed >= 100 << 20 && m.diskTotal >= m.diskUsed,
  'Sandbox.getMetrics gives one current sample of CPU, memory and disk (the 100 MiB file counted)', metrics)
  report.metrics = m

  const page = await Sandbox.list().nextItems()
  check(page.some((s) => s.sandboxId === sbx.sandboxId && s.metadata.suite === 'sdk'), 'Sandbox.list lists it with its metadata', page)

  const again = await Sandbox.connect(sbx.sandboxId)
  const seen = await again.commands.run('cat /workspace/big.bin | sha256sum | cut -c1-64')
  check(seen.stdout.trim() === report.bigFileSha256, 'Sandbox.connect reaches the same sandbox', seen.stdout)

  const other = { apiKey: process.env.E2B_OTHER_KEY }
  let foreign
  try {
    await Sandbox.connect(sbx.sandboxId, other)
  } catch (e) {
    foreign = e.name
  }
  check(foreign === 'SandboxNotFoundError' || foreign === 'NotFoundError', 'another tenant cannot connect to it', foreign)
  check(await Sandbox.kill(sbx.sandboxId, other) === false, 'another tenant cannot kill it', true)
  let foreignMetrics
  try {
    await Sandbox.getMetrics(sbx.sandboxId, other)
  } catch (e) {
    // SDKs before 2.30 report the 404 as a plain SandboxError.
    foreignMetrics = e.name === 'SandboxError' && e.message.startsWith('404') ? 'NotFoundError' : e.name
  }
  check(foreignMetrics === 'SandboxNotFoundError' || foreignMetrics === 'NotFoundError', 'another tenant cannot read its metrics', foreignMetrics)
  const otherPage = await Sandbox.list(other).nextItems()
  check(!otherPage.some((s) => s.sandboxId === sbx.sandboxId), 'another tenant does not list it', otherPage)

  const forged = await fetch(`${process.env.E2B_SANDBOX_URL}/files?path=/workspace/big.bin`, {
    headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': 'sga1_7_' + '00'.repeat(32) },
  })
  check(forged.status === 404, 'a wrong access token is refused', forged.status)

  await sbx.kill()
  const after = await Sandbox.list().nextItems()
  check(!after.some((s) => s.sandboxId === sbx.sandboxId), 'kill removes it', after)
}

// newer reports whether the running e2b is at least version v ("2.42.0").
const newer = (v) => {
  const [a, b] = [report.sdk, v].map((x) => x.split('.').map(Number))
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i]
  return true
}

// pausing drives pause and resume (SDKs that have Sandbox#pause): files
// kept, processes gone, the paused state listed and reported, 409 for a
// second pause, 201 from connect when it resumed and 200 when it ran,
// the data plane refused with 409 unless the lifecycle resumes on
// traffic, a pause at the timeout, keepMemory refused under runc, and
// another tenant refused throughout.
async function pausing() {
  if (typeof Sandbox.prototype.pause !== 'function') {
    report.steps.push('no Sandbox#pause in this SDK: pausing not driven')
    return
  }
  const api = process.env.E2B_API_URL
  const connectStatus = async (id) => (await fetch(`${api}/sandboxes/${id}/connect`, {
    method: 'POST', headers: { 'X-API-Key': process.env.E2B_API_KEY, 'Content-Type': 'application/json' }, body: JSON.stringify({ timeout: 300 }),
  })).status
  const other = { apiKey: process.env.E2B_OTHER_KEY }
  // e2b 2.3x to 2.41 ask for the memory to be kept unless told not to,
  // in the object form of onTimeout that earlier ones do not read.
  const objectForm = fs.readFileSync(require.resolve('e2b'), 'utf8').includes('autoPauseMemory')
  const onTimeout = objectForm ? { action: 'pause', keepMemory: false } : 'pause'
  const filesOnly = { keepMemory: false }

  const sbx = await Sandbox.create({ timeoutMs: 300_000, metadata: { suite: 'pause' }, lifecycle: { onTimeout } })
  // Read raw: e2b before 2.2x does not parse lifecycle.
  const info0 = await (await fetch(`${api}/sandboxes/${sbx.sandboxId}`, { headers: { 'X-API-Key': process.env.E2B_API_KEY } })).json()
  check(info0.lifecycle?.onTimeout === 'pause' && info0.lifecycle?.autoResume === false, 'sandbox info reports lifecycle onTimeout pause', info0.lifecycle)
  await sbx.files.write('/workspace/kept.txt', 'kept')
  await sbx.commands.run('sleep 600', { background: true })

  if (objectForm) { // earlier SDKs cannot ask for the memory
    let memoryErr
    try {
      await sbx.pause({ keepMemory: true })
    } catch (e) {
      memoryErr = e.message
    }
    check(/gVisor/.test(memoryErr ?? ''), 'pause({keepMemory: true}) is refused under runc, naming gVisor', memoryErr)
  }
  let foreignPause
  try {
    await Sandbox.pause(sbx.sandboxId, other)
  } catch (e) {
    foreignPause = e.name
  }
  check(foreignPause === 'SandboxNotFoundError' || foreignPause === 'NotFoundError', 'another tenant cannot pause it', foreignPause)

  check(await sbx.pause(filesOnly) === true, 'pause pauses a running sandbox', false)
  check(await sbx.pause(filesOnly) === false, 'a second pause answers false (409)', true)
  const paused = await sbx.getInfo()
  check(paused.state === 'paused', 'getInfo reports it paused', paused.state)
  const listedPaused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems()
  const listedRunning = await Sandbox.list({ query: { state: ['running'] } }).nextItems()
  check(listedPaused.some((s) => s.sandboxId === sbx.sandboxId && s.state === 'paused') && !listedRunning.some((s) => s.sandboxId === sbx.sandboxId),
    'Sandbox.list with state paused lists it, with state running does not', { listedPaused, listedRunning })
  const metrics = await Sandbox.getMetrics(sbx.sandboxId)
  check(metrics.length === 0, 'a paused sandbox has no metrics sample (reading them does not resume it)', metrics)

  let refused
  try {
    await sbx.files.read('/workspace/kept.txt')
  } catch (e) {
    refused = e.message
  }
  check(/paused/.test(refused ?? ''), 'without autoResume the data plane refuses a paused sandbox, saying so', refused)
  check((await sbx.getInfo()).state === 'paused', 'the refused request did not resume it', true)

  check(await connectStatus(sbx.sandboxId) === 201, 'connect resumes a paused sandbox: 201', false)
  check(await connectStatus(sbx.sandboxId) === 200, 'connect of a running sandbox: 200', false)
  const resumed = await Sandbox.connect(sbx.sandboxId)
  check(await resumed.files.read('/workspace/kept.txt') === 'kept', 'the resumed sandbox has its files', false)
  const procs = await resumed.commands.list()
  check(!procs.some((p) => p.cmd === 'sleep' || (p.args ?? []).includes('600')), 'its processes ended with the pause', procs)

  // The timeout pauses it (lifecycle onTimeout pause) rather than kill it.
  await resumed.setTimeout(2_000)
  let state
  for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 250))) {
    state = (await Sandbox.getInfo(sbx.sandboxId)).state
    if (state === 'paused') break
  }
  check(state === 'paused', 'its timeout pauses it', state)
  const back = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 300_000 })
  check(await back.files.read('/workspace/kept.txt') === 'kept', 'after the timeout pause connect resumes it with its files', false)
  await back.kill()

  if (newer('2.42.0')) {
    // Older SDKs turn autoResume down without keepMemory, which runc cannot keep.
    const auto = await Sandbox.create({ timeoutMs: 300_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
    await auto.files.write('/workspace/a.txt', 'auto')
    check(await auto.pause() === true, 'pause with the SDK defaults (keepMemory unset) pauses', false)
    check(await auto.files.read('/workspace/a.txt') === 'auto', 'with autoResume a data-plane request resumes it', false)
    check((await auto.getInfo()).state === 'running', 'and it runs again', true)
    await auto.kill()
  }
}

// snapshots drives snapshots (every SDK here) and forks (e2b 2.39 and
// later): a snapshot keeps the files as they were, Sandbox.create takes
// its id, listSnapshots lists it for its tenant alone, another tenant can
// neither use nor delete it, a fork copies the files as they are, a
// count over 100 is refused, and deleteSnapshot answers true then false.
async function snapshots() {
  const other = { apiKey: process.env.E2B_OTHER_KEY }
  const sbx = await Sandbox.create({ timeoutMs: 300_000, metadata: { suite: 'snapshots' } })
  await sbx.files.write('/workspace/s.txt', 'v1')
  const snap = await Sandbox.createSnapshot(sbx.sandboxId, { name: 'sdk-v1' })
  check(typeof snap.snapshotId === 'string' && snap.snapshotId.length > 0, 'createSnapshot gives a snapshot id', snap)
  await sbx.files.write('/workspace/s.txt', 'v2')

  const from = await Sandbox.create(snap.snapshotId, { timeoutMs: 300_000 })
  check(await from.files.read('/workspace/s.txt') === 'v1', 'Sandbox.create(snapshotId) starts with the files as they were at the snapshot', false)
  const mine = await Sandbox.listSnapshots().nextItems()
  check(mine.some((x) => x.snapshotId === snap.snapshotId), 'listSnapshots lists it', mine)
  const theirs = await Sandbox.listSnapshots(other).nextItems()
  check(!theirs.some((x) => x.snapshotId === snap.snapshotId), 'another tenant does not list it', theirs)
  let foreign
  try {
    await Sandbox.create(snap.snapshotId, other)
  } catch (e) {
    foreign = e.message
  }
  check(foreign !== undefined, 'another tenant cannot create a sandbox from it', foreign)
  check(await Sandbox.deleteSnapshot(snap.snapshotId, other) === false, 'another tenant cannot delete it', true)

  if (typeof Sandbox.fork === 'function') {
    const forks = await Sandbox.fork(sbx.sandboxId, { count: 2, timeoutMs: 300_000 })
    check(forks.length === 2 && forks.every((f) => !(f instanceof Error)), 'fork makes 2 sandboxes', forks.map(String))
    for (const f of forks.filter((f) => !(f instanceof Error))) {
      check(await f.files.read('/workspace/s.txt') === 'v2' && f.sandboxId !== sbx.sandboxId, 'a fork has the files as they were when forked, under its own id', f.sandboxId)
      await f.kill()
    }
    let tooMany
    try {
      await Sandbox.fork(sbx.sandboxId, { count: 101 })
    } catch (e) {
      tooMany = e.message
    }
    check(/1 to 100/.test(tooMany ?? ''), 'a fork of 101 is refused', tooMany)
  }

  check(await Sandbox.deleteSnapshot(snap.snapshotId) === true, 'deleteSnapshot deletes it', false)
  check(await Sandbox.deleteSnapshot(snap.snapshotId) === false, 'a second deleteSnapshot answers false', true)
  check(await from.files.read('/workspace/s.txt') === 'v1', 'a sandbox made from a deleted snapshot keeps its files', false)
  await from.kill()
  await sbx.kill()
}

// memory drives a pause that keeps memory, on a gateway whose sandboxes
// run under gVisor (SDK_PARTS=memory): after pause() with the SDK's
// defaults and connect, a background command is still running and the
// code interpreter still has its variable; after pause({keepMemory:
// true}) and connect with onResume 'reboot' (e2b 2.5x), they are gone
// and the files are there. A snapshot taken between holds them too: a
// sandbox made from it runs the command and has the variable.
async function memory() {
  const sbx = await Sandbox.create({ timeoutMs: 300_000, metadata: { suite: 'memory' } })
  await sbx.files.write('/workspace/kept.txt', 'kept')
  const bg = await sbx.commands.run('sleep 600', { background: true })
  if (!coreOnly) await sbx.runCode('kept = 41')
  check(await sbx.pause() === true, 'pause with the SDK defaults pauses', false)
  check((await Sandbox.getInfo(sbx.sandboxId)).state === 'paused', 'it is listed paused', true)
  const back = await Sandbox.connect(sbx.sandboxId)
  const procs = await back.commands.list()
  check(procs.some((p) => p.pid === bg.pid), 'after connect the background command still runs (memory kept)', procs)
  if (!coreOnly) {
    const cell = await back.runCode('kept + 1')
    check(cell.text === '42', 'the code interpreter still has its variable', cell.text ?? cell.error)
  }
  // A snapshot holds the memory too: a sandbox made from it has them.
  const snap = await Sandbox.createSnapshot(sbx.sandboxId, { name: 'memory' })
  const copy = await Sandbox.create(snap.snapshotId, { timeoutMs: 300_000 })
  const copied = await copy.commands.list()
  check(copied.some((p) => p.pid === bg.pid), 'a sandbox made from a snapshot runs the background command (memory in the snapshot)', copied)
  if (!coreOnly) {
    const cell = await copy.runCode('kept + 1')
    check(cell.text === '42', "a sandbox made from a snapshot has the code interpreter's variable", cell.text ?? cell.error)
  }
  await copy.kill()
  await Sandbox.deleteSnapshot(snap.snapshotId)
  if (Sandbox.connect.toString().includes('onResume') || fs.readFileSync(require.resolve('e2b'), 'utf8').includes('onResume')) {
    check(await back.pause({ keepMemory: true }) === true, 'pause({keepMemory: true}) pauses', false)
    const fresh = await Sandbox.connect(sbx.sandboxId, { onResume: 'reboot' })
    const after = await fresh.commands.list()
    check(!after.some((p) => p.pid === bg.pid), "connect with onResume 'reboot' starts it afresh", after)
    check(await fresh.files.read('/workspace/kept.txt') === 'kept', 'with its files', false)
  }
  await back.kill()
}

const only = process.env.SDK_PARTS
try {
  if (only) throw null // a named part alone, below
  const sbx = await Sandbox.create({ timeoutMs: 300_000, metadata: { suite: 'sdk' } })
  report.sandboxId = sbx.sandboxId
  for (const part of coreOnly ? [commands, files, lifecycle] : [commands, files, code, lifecycle]) {
    try {
      await part(sbx)
    } catch (e) {
      report.failures.push(`${part.name}: ${e.name}: ${e.message}`)
    }
  }
} catch (e) {
  if (e !== null) report.failures.push(`create: ${e.name}: ${e.message}`)
}
for (const part of only ? [{ memory }[only]] : [pausing, snapshots]) {
  try {
    await part()
  } catch (e) {
    report.failures.push(`${part.name}: ${e.name}: ${e.message}`)
  }
}
console.log(JSON.stringify(report, null, 2))
process.exit(report.failures.length ? 1 : 0)
