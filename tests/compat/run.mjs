// run.mjs — the unmodified `e2b` and `@daytonaio/sdk` packages (pinned in package.json) driven
// against a real `sandboxer serve` on loopback; prints TAP. Run by
// tests/integration/test-compat.sh, which sets SANDBOXER (the binary), SBX_TMP (a scratch dir
// of its own) and, for an unprivileged user, POLICY. The SDKs are configured only through their
// documented settings: E2B_API_KEY / E2B_API_URL / E2B_SANDBOX_URL, and the Daytona client's
// apiKey / apiUrl (DAYTONA_API_KEY / DAYTONA_API_URL).
import { startServer, DOMAIN } from './lib.mjs';

const SBX = process.env.SANDBOXER;
const TMP = process.env.SBX_TMP;
if (!SBX || !TMP) {
  console.log('1..0 # SKIP SANDBOXER and SBX_TMP are needed (run tests/integration/test-compat.sh)');
  process.exit(0);
}

let n = 0, failed = 0;
function ok(cond, name, diag) {
  n++;
  if (cond) console.log(`ok ${n} - ${name}`);
  else {
    failed++;
    console.log(`not ok ${n} - ${name}`);
    if (diag !== undefined) for (const l of String(diag).split('\n').slice(0, 20)) console.log('#   ' + l);
  }
  return cond;
}
const is = (got, want, name) => ok(JSON.stringify(got) === JSON.stringify(want), name, `got: ${JSON.stringify(got)}\nexpected: ${JSON.stringify(want)}`);
const diag = (s) => console.log('# ' + s);
// A step that must not throw: its failure is a failed test, not the end of the run.
async function step(name, fn) {
  if (process.env.COMPAT_ONLY && !name.includes(process.env.COMPAT_ONLY)) return undefined; // a developer's filter
  try { return await fn(); } catch (e) { ok(false, name, (e && e.stack) || e); return undefined; }
}
async function throws(name, fn, check) {
  try { await fn(); ok(false, name, 'no error was thrown'); } catch (e) { ok(check(e), name, `${e && e.constructor && e.constructor.name}: ${e && e.message}`); }
}

// ---- the server ----------------------------------------------------------------------------
const srv = await startServer(SBX, TMP);
if (typeof srv === 'string') {
  console.log(`1..0 # SKIP ${srv}`);
  process.exit(0);
}
const { BASE, KEY, OTHER, native, viaHost, stop } = srv;

const { Sandbox, CommandExitError, NotFoundError, FileNotFoundError, AuthenticationError, SandboxNotFoundError } = await import('e2b');
const { Daytona } = await import('@daytonaio/sdk');

const watchdog = setTimeout(async () => { ok(false, 'the run finished within its time'); await stop(); process.exit(1); }, 240000);

// ---- E2B -----------------------------------------------------------------------------------
const sbx = await step('e2b: Sandbox.create', () => Sandbox.create({ timeoutMs: 120000, envs: { SBX_SANDBOX_VAR: 'sandbox-wide' }, metadata: { suite: 'compat', run: String(process.pid) } }));
if (sbx) {
  ok(/^sbx-[0-9a-f]{16}$/.test(sbx.sandboxId), 'e2b: create answers a sandbox id', sbx.sandboxId);
  await step('e2b: commands.run', async () => {
    const r = await sbx.commands.run('echo out; echo err >&2; echo "$SBX_SANDBOX_VAR $CMD_VAR"', { envs: { CMD_VAR: 'per-command' } });
    is(r.exitCode, 0, 'e2b: run exits 0');
    is(r.stdout, 'out\nsandbox-wide per-command\n', 'e2b: run stdout, with the sandbox envVars and the command envs');
    is(r.stderr, 'err\n', 'e2b: run stderr apart');
  });
  await step('e2b: cwd', async () => {
    await sbx.files.makeDir('/tmp/wd');
    is((await sbx.commands.run('pwd', { cwd: '/tmp/wd' })).stdout, '/tmp/wd\n', 'e2b: run in cwd');
  });
  await throws('e2b: a non-zero exit raises CommandExitError with its code and output', () => sbx.commands.run('echo partial; exit 7'),
    (e) => e instanceof CommandExitError && e.exitCode === 7 && e.stdout === 'partial\n');
  await step('e2b: streaming', async () => {
    const seen = [];
    const t0 = Date.now();
    const r = await sbx.commands.run('echo first; sleep 1.5; echo second', { onStdout: (d) => seen.push([Date.now() - t0, d]) });
    const t1 = Date.now() - t0;
    ok(seen.length >= 2 && seen[0][1] === 'first\n', 'e2b: onStdout sees each line', JSON.stringify(seen));
    ok(seen.length >= 1 && seen[0][0] < t1 - 1000, 'e2b: onStdout sees the first line before the command ends', JSON.stringify({ seen, end: t1 }));
    is(r.stdout, 'first\nsecond\n', 'e2b: the result still has all the output');
  });
  await step('e2b: background + kill', async () => {
    const h = await sbx.commands.run('sleep 60', { background: true });
    ok(typeof h.pid === 'number' && h.pid > 0, 'e2b: a background command has a pid', h.pid);
    const listed = await sbx.commands.list();
    ok(listed.some((p) => p.pid === h.pid && p.args.includes('sleep 60')), 'e2b: commands.list shows it', JSON.stringify(listed));
    is(await h.kill(), true, 'e2b: kill answers true');
    await throws('e2b: wait on a killed command raises CommandExitError', () => h.wait(), (e) => e instanceof CommandExitError);
    is(await sbx.commands.kill(h.pid), false, 'e2b: killing it again answers false (not found)');
  });
  await step('e2b: kill right after start', async () => {
    const wrong = [];
    for (let i = 0; i < 200; i++) {
      const h = await sbx.commands.run('sleep 30', { background: true });
      if ((await h.kill()) !== true) wrong.push(i);
    }
    is(wrong, [], 'e2b: 200 times start then kill at once: every kill answers true');
    let left = -1;
    for (let t = 0; t < 50 && left !== 0; t++) {
      left = (await sbx.commands.list()).filter((p) => p.args.includes('sleep 30')).length;
      if (left) await new Promise((r) => setTimeout(r, 100));
    }
    is(left, 0, 'e2b: and none of them is left running (within 5 s)');
  });
  await step('e2b: a dev server through getHost', async () => {
    await sbx.files.write('/home/user/site/index.html', '<h1>from the sandbox</h1>');
    const srv = await sbx.commands.run('cd /home/user/site && python3 -m http.server 3000 --bind 127.0.0.1', { background: true, timeoutMs: 0 });
    const host = sbx.getHost(3000);
    is(host, `3000-${sbx.sandboxId}.${DOMAIN}`, 'e2b: getHost names PORT-ID.DOMAIN (the domain serve --domain gave)');
    let r = { status: 0 };
    for (let i = 0; i < 100 && r.status !== 200; i++) {
      r = await viaHost(host, '/index.html', { 'e2b-traffic-access-token': sbx.trafficAccessToken });
      if (r.status !== 200) await new Promise((res) => setTimeout(res, 50));
    }
    is([r.status, r.body], [200, '<h1>from the sandbox</h1>'], 'e2b: the dev server answers through its host, with the traffic token');
    const anon = await viaHost(host, '/index.html');
    is(anon.status, 401, 'e2b: without the traffic token a private sandbox\'s port answers 401');
    const none = await viaHost(`3999-${sbx.sandboxId}.${DOMAIN}`, '/', { 'e2b-traffic-access-token': sbx.trafficAccessToken });
    ok(none.status === 502 && /nothing listens/.test(none.body), 'e2b: a port nothing listens on: 502 with a message', none.body);
    await srv.kill();
  });
  await step('e2b: files.watchDir', async () => {
    await sbx.files.makeDir('/home/user/watched/sub');
    const events = [];
    const has = (t, n) => events.some((e) => e[0] === t && e[1] === n);
    const until = async (t, n) => { for (let i = 0; i < 100 && !has(t, n); i++) await new Promise((r) => setTimeout(r, 50)); return has(t, n); };
    const h = await sbx.files.watchDir('/home/user/watched', (ev) => events.push([ev.type, ev.name]), { recursive: true });
    await sbx.files.write('/home/user/watched/a.txt', 'x');
    ok(await until('create', 'a.txt') && await until('write', 'a.txt'), 'e2b: watchDir sees a file created and written', JSON.stringify(events));
    await sbx.commands.run('mkdir /home/user/watched/sub/deeper');
    ok(await until('create', 'sub/deeper'), 'e2b: ...a directory made in a subdirectory (recursive)', JSON.stringify(events));
    await sbx.commands.run('echo y > /home/user/watched/sub/deeper/b.txt; chmod 600 /home/user/watched/sub/deeper/b.txt; mv /home/user/watched/a.txt /home/user/watched/c.txt; rm /home/user/watched/c.txt');
    ok(await until('create', 'sub/deeper/b.txt') && await until('chmod', 'sub/deeper/b.txt'), 'e2b: ...in the new directory too, and a chmod', JSON.stringify(events));
    ok(await until('rename', 'a.txt') && await until('create', 'c.txt') && await until('remove', 'c.txt'), 'e2b: ...a rename and a remove', JSON.stringify(events));
    await h.stop();
    const n = events.length;
    await sbx.files.write('/home/user/watched/late.txt', 'z');
    await new Promise((r) => setTimeout(r, 300));
    is(events.length, n, 'e2b: after stop no more events');
    await throws('e2b: watchDir of a directory that is not there', () => sbx.files.watchDir('/home/user/nope', () => {}), (e) => /no such directory/.test(e.message));
    await sbx.commands.run('mkdir -p /tmp/many && cd /tmp/many && seq 1 8300 | xargs mkdir');
    await throws('e2b: a recursive watch past the watch cap is refused, not hung', () => sbx.files.watchDir('/tmp/many', () => {}, { recursive: true }), (e) => /8192 directories/.test(e.message));
  });
  await step('e2b: signed file URLs', async () => {
    await sbx.files.write('/home/user/signed.txt', 'signed content');
    const dl = await sbx.downloadUrl('/home/user/signed.txt');
    ok(/signature=v1_/.test(dl), 'e2b: downloadUrl is signed', dl);
    let r = await fetch(dl);
    is([r.status, await r.text()], [200, 'signed content'], 'e2b: the signed download URL needs no other credentials');
    const exp = await sbx.downloadUrl('/home/user/signed.txt', { useSignatureExpiration: 60 });
    is((await fetch(exp)).status, 200, 'e2b: a signed URL with an expiry works before it');
    const u = new URL(dl);
    u.searchParams.set('path', '/home/user/other.txt');
    is((await fetch(u)).status, 403, 'e2b: a signed URL for another path: 403');
    const past = new URL(exp);
    past.searchParams.set('signature_expiration', String(Math.floor(Date.now() / 1000) - 10));
    is((await fetch(past)).status, 403, 'e2b: a changed expiry: 403');
    const up = await sbx.uploadUrl('/home/user/up.txt');
    const form = new FormData();
    form.append('file', new Blob(['uploaded']), 'up.txt');
    r = await fetch(up, { method: 'POST', body: form });
    ok(r.status === 200, 'e2b: the signed upload URL takes a file', `${r.status} ${await r.text()}`);
    is(await sbx.files.read('/home/user/up.txt'), 'uploaded', 'e2b: the uploaded file is there');
    is((await fetch(dl.replace('v1_', 'v1_x'))).status, 403, 'e2b: an altered signature: 403');
    const envd = await viaHost(`49983-${sbx.sandboxId}.${DOMAIN}`, '/health', { 'X-Access-Token': sbx.envdAccessToken });
    is(envd.status, 204, 'e2b: envd by Host (49983-ID.DOMAIN)');
  });
  await step('e2b: pty', async () => {
    const dec = new TextDecoder(), enc = new TextEncoder();
    let out = '', out2 = '';
    const until = async (get, s, ms = 8000) => { for (let t = 0; t < ms / 50 && !get().includes(s); t++) await new Promise((r) => setTimeout(r, 50)); return get().includes(s); };
    const t = await sbx.pty.create({ cols: 100, rows: 30, onData: (d) => { out += dec.decode(d); }, timeoutMs: 0 });
    ok(typeof t.pid === 'number' && t.pid > 0, 'e2b: pty.create answers a pid', t.pid);
    const t0 = Date.now();
    await sbx.pty.sendInput(t.pid, enc.encode('tty; stty size; echo pty-$((6*7))\n'));
    ok(await until(() => out, 'pty-42'), 'e2b: pty.sendInput in, onData out (an echo)', out.slice(-300));
    console.log(`# e2b pty: input to its output ${Date.now() - t0} ms`);
    ok(/\/dev\/pts\/\d+/.test(out) && out.includes('30 100'), "e2b: the PTY is the sandbox's own, of the size asked", out.slice(-300));
    await sbx.pty.resize(t.pid, { cols: 120, rows: 40 });
    await sbx.pty.sendInput(t.pid, enc.encode('stty size\n'));
    ok(await until(() => out, '40 120'), 'e2b: pty.resize', out.slice(-200));
    const t2 = await sbx.pty.connect(t.pid, { onData: (d) => { out2 += dec.decode(d); } });
    await sbx.pty.sendInput(t.pid, enc.encode('echo again-$((1+1))\n'));
    ok(await until(() => out2, 'again-2'), 'e2b: pty.connect: a second connection sees the output', out2.slice(-200));
    await sbx.pty.sendInput(t.pid, enc.encode('exit 5\n'));
    let code = null;
    try { code = (await t.wait()).exitCode; } catch (e) { code = e.exitCode; }
    is(code, 5, 'e2b: the PTY ends with its shell, exit code 5');
    try { await t2.wait(); } catch { /* the same end */ }
    is(await sbx.pty.kill(t.pid), false, 'e2b: pty.kill of an ended PTY answers false');
  });
  await throws('e2b: pty.resize of a command without a PTY fails', async () => {
    const h = await sbx.commands.run('sleep 5', { background: true });
    try { await sbx.pty.resize(h.pid, { cols: 10, rows: 10 }); } finally { await h.kill(); }
  }, (e) => /PTY/.test(String(e.message)));
  await step('e2b: background + wait', async () => {
    const h = await sbx.commands.run('sleep 0.3; echo done', { background: true });
    is((await h.wait()).stdout, 'done\n', 'e2b: wait on a background command gives its result');
  });
  await step('e2b: stdin', async () => {
    const h = await sbx.commands.run('cat; echo end', { background: true, stdin: true });
    await sbx.commands.sendStdin(h.pid, 'line one\n');
    await sbx.commands.sendStdin(h.pid, 'line two\n');
    await sbx.commands.closeStdin(h.pid);
    is((await h.wait()).stdout, 'line one\nline two\nend\n', 'e2b: sendStdin and closeStdin reach the command');
  });
  await step('e2b: files', async () => {
    const w = await sbx.files.write('/home/user/hello.txt', 'hello, file');
    ok(w && w.path && w.name === 'hello.txt', 'e2b: files.write answers the entry', JSON.stringify(w));
    is(await sbx.files.read('/home/user/hello.txt'), 'hello, file', 'e2b: files.read text');
    is(await sbx.files.read('hello.txt'), 'hello, file', 'e2b: a relative path is the home directory');
    is((await sbx.commands.run('cat "$HOME/hello.txt"')).stdout, 'hello, file', 'e2b: the command sees the file in its HOME');
    is((await sbx.commands.run('echo $HOME; pwd; id -un; touch /home/user/t && echo writable')).stdout, '/home/user\n/home/user\nuser\nwritable\n',
      'e2b: the home is /home/user (HOME, the default cwd, writable) and uid 1000 is user');
    // the standard pattern: a script written through the files API, run by a command, its output read back
    await sbx.files.write('/home/user/x.py', 'open("/home/user/out.txt", "w").write(str(6 * 7))\nprint("ran")\n');
    is((await sbx.commands.run('python3 /home/user/x.py')).stdout, 'ran\n', 'e2b: files.write a script under /home/user, then commands.run it');
    is(await sbx.files.read('/home/user/out.txt'), '42', 'e2b: and files.read what it wrote');
    const bytes = new Uint8Array([0, 1, 2, 254, 255, 10]);
    await sbx.files.write('/tmp/deep/er/bin.dat', bytes.buffer);
    is(Array.from(await sbx.files.read('/tmp/deep/er/bin.dat', { format: 'bytes' })), Array.from(bytes), 'e2b: bytes round-trip (parents made)');
    await throws('e2b: a missing file raises FileNotFoundError', () => sbx.files.read('/tmp/no-such-file'), (e) => e instanceof FileNotFoundError || e instanceof NotFoundError);
    const names = (await sbx.files.list('/tmp')).map((e) => `${e.name}:${e.type}`).sort();
    ok(names.includes('deep:dir'), 'e2b: files.list', JSON.stringify(names));
    const home = (await sbx.files.list('/home/user')).map((e) => `${e.name}:${e.type}`).sort();
    ok(home.includes('hello.txt:file') && home.includes('x.py:file'), 'e2b: files.list of the home', JSON.stringify(home));
    is(await sbx.files.exists('/home/user/hello.txt'), true, 'e2b: files.exists');
    const info = await sbx.files.getInfo('/home/user/hello.txt');
    ok(info.type === 'file' && info.size === 11 && info.modifiedTime instanceof Date, 'e2b: files.getInfo', JSON.stringify(info));
    is(await sbx.files.makeDir('/tmp/made'), true, 'e2b: makeDir');
    is(await sbx.files.makeDir('/tmp/made'), false, 'e2b: makeDir of an existing directory answers false');
    const moved = await sbx.files.rename('/home/user/hello.txt', '/tmp/made/moved.txt');
    is(moved.path, '/tmp/made/moved.txt', 'e2b: rename');
    await sbx.files.remove('/tmp/made');
    is(await sbx.files.exists('/tmp/made/moved.txt'), false, 'e2b: remove');
  });
  await step('e2b: honest answers', async () => {
    await throws('e2b: user root is refused, saying the sandbox has no root (not run as uid 1000 quietly)',
      () => sbx.commands.run('id -u', { user: 'root' }), (e) => /no root/.test(e.message));
    let first;
    try { first = await sbx.pause(); } catch (e) { first = e; }
    if (first instanceof Error && /cannot be paused/.test(first.message))
      console.log(`ok ${++n} # SKIP pause: ${first.message.slice(0, 150)}`); /* no freezer for this user here */
    else {
      is([first, await sbx.pause()], [true, false], 'e2b: pause answers true, then false for one paused already (409)');
      await sbx.connect();
    }
    const r = await fetch(BASE + '/templates', { headers: { 'X-API-KEY': KEY } });
    is(r.status, 404, 'e2b: a route sandboxer does not serve answers 404, not 401');
    const r2 = await fetch(BASE + '/no/such/route');
    is(r2.status, 404, 'an unknown route answers 404 even without credentials');
  });
  await step('e2b: setTimeout and getInfo', async () => {
    const before = await sbx.getInfo();
    is(before.metadata, { suite: 'compat', run: String(process.pid) }, 'e2b: getInfo has the metadata');
    is(before.state, 'running', 'e2b: getInfo state');
    await sbx.setTimeout(900000);
    const after = await sbx.getInfo();
    ok(after.endAt - Date.now() > 800000, 'e2b: setTimeout moves endAt', `${before.endAt.toISOString()} -> ${after.endAt.toISOString()}`);
  });
  await step('e2b: list', async () => {
    const items = await Sandbox.list({ query: { metadata: { suite: 'compat' } } }).nextItems();
    ok(items.some((s) => s.sandboxId === sbx.sandboxId), 'e2b: Sandbox.list with a metadata filter finds it', JSON.stringify(items.map((s) => s.sandboxId)));
    const none = await Sandbox.list({ query: { metadata: { suite: 'not-this' } } }).nextItems();
    is(none.length, 0, 'e2b: a filter that matches nothing lists nothing');
  });
  await step('e2b: connect', async () => {
    const again = await Sandbox.connect(sbx.sandboxId);
    is((await again.commands.run('echo again')).stdout, 'again\n', 'e2b: Sandbox.connect gives a working handle');
  });
  await step('e2b: tenants and keys', async () => {
    await throws('e2b: another tenant cannot see it', () => Sandbox.getInfo(sbx.sandboxId, { apiKey: OTHER }), (e) => e instanceof SandboxNotFoundError || e instanceof NotFoundError);
    await throws('e2b: an unknown API key is refused', () => Sandbox.list({ apiKey: 'sbx_not_a_token' }).nextItems(), (e) => e instanceof AuthenticationError);
  });
  await step('e2b: the native API and the event stream see the same sandbox', async () => {
    // the stored events of this sandbox (SSE replays them from the start), read until an exec's end
    const ac = new AbortController();
    const res = await fetch(`${BASE}/v1/events?sandbox=${sbx.sandboxId}`, { headers: { Authorization: `Bearer ${KEY}` }, signal: ac.signal });
    const reader = res.body.getReader();
    let text = '';
    const until = Date.now() + 10000;
    while (Date.now() < until && (text.match(/event: sandbox\.exec\n/g) || []).length < 5) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
    ac.abort();
    const ids = [...text.matchAll(/"exec_id":"(exe_[0-9a-f]+)"/g)].map((m) => m[1]);
    ok(/event: sandbox\.state\n/.test(text) && ids.length >= 5, 'e2b: each command is a native exec, in the event stream', text.slice(0, 400));
    const one = ids.length ? await (await native('GET', `/v1/sandboxes/${sbx.sandboxId}/execs/${ids[0]}`)).json() : {};
    is(one.report && one.report.schema, 'sandboxer.report/v1', 'e2b: with its report through the native API');
  });
  await step('e2b: kill', async () => {
    is(await sbx.isRunning(), true, 'e2b: isRunning before kill');
    is(await sbx.kill(), true, 'e2b: kill answers true');
    is(await Sandbox.kill(sbx.sandboxId), false, 'e2b: a second kill answers false (404)');
    is(await sbx.isRunning(), false, 'e2b: isRunning after kill');
    await throws('e2b: getInfo after kill raises SandboxNotFoundError', () => Sandbox.getInfo(sbx.sandboxId), (e) => e instanceof SandboxNotFoundError || e instanceof NotFoundError);
    const rec = await (await native('GET', `/v1/sandboxes/${sbx.sandboxId}`)).json();
    is(rec.state, 'destroyed', 'e2b: the native record says destroyed');
  });
}

// ---- E2B's network controls: allowOut/denyOut at create, updateNetwork (docs/network.md) -------
// Nothing leaves: every name here is refused by the proxy before it is resolved.
await step('e2b: network controls', async () => {
  await throws('e2b: an allowOut outside the policy is refused, naming it', () => Sandbox.create({ timeoutMs: 60000, network: { allowOut: ['evil.example.org'] } }), (e) => /egress_allowed/.test(e.message));
  await throws('e2b: header transforms are refused by name, not ignored', () => Sandbox.create({ timeoutMs: 60000, network: { rules: { 'a.example.test': [{ transform: { headers: { 'X-K': 'v' } } }] } } }), (e) => /network\.rules/.test(e.message));
  const nb = await Sandbox.create({ timeoutMs: 60000, allowInternetAccess: false });
  try {
    is((await Sandbox.getInfo(nb.sandboxId)).network && (await Sandbox.getInfo(nb.sandboxId)).network.denyOut, ['0.0.0.0/0'], 'e2b: allowInternetAccess: false is denyOut 0.0.0.0/0, in getInfo');
    const r = await nb.commands.run('curl -sS -o /dev/null -w %{http_code} http://blocked.example.test/; true');
    is(r.stdout, '403', 'e2b: such a sandbox has the proxy, which refuses (HTTP 403)');
    await nb.updateNetwork({ denyOut: ['10.0.0.0/8'] });
    const info = await Sandbox.getInfo(nb.sandboxId);
    is([info.network.allowOut, info.network.denyOut], [[], ['10.0.0.0/8']], 'e2b: updateNetwork replaces the rules (a field left out is cleared)');
    await throws('e2b: updateNetwork outside the policy is refused', () => nb.updateNetwork({ allowOut: ['evil.example.org'] }), (e) => /egress_allowed/.test(e.message));
    const x = await (await native('GET', `/v1/sandboxes/${nb.sandboxId}`)).json();
    is(x.network, { egress: [], egress_deny: ['10.0.0.0/8'] }, 'e2b: the native record has the same rules');
  } finally { await nb.kill(); }
  const plain = await Sandbox.create({ timeoutMs: 60000 });
  try {
    await throws('e2b: updateNetwork on a sandbox made without network rules says why', () => plain.updateNetwork({ allowOut: [] }), (e) => /no egress proxy/.test(e.message));
  } finally { await plain.kill(); }
});

// ---- Daytona -------------------------------------------------------------------------------
const daytona = new Daytona({ apiKey: KEY, apiUrl: `${BASE}/api`, target: 'local' });
const ds = await step('daytona: create', () => daytona.create({ envVars: { SBX_DAYTONA: 'dv' }, labels: { suite: 'compat-daytona' } }));
if (ds) {
  is(ds.state, 'started', 'daytona: the sandbox is started');
  await step('daytona: executeCommand', async () => {
    const r = await ds.process.executeCommand('echo hi; echo "$SBX_DAYTONA"; exit 3');
    is([r.exitCode, r.result], [3, 'hi\ndv\n'], 'daytona: executeCommand exit code and output, with the sandbox env');
    const r2 = await ds.process.executeCommand('pwd; echo "$X"', '/tmp', { X: 'y' }, 10);
    is(r2.result, '/tmp\ny\n', 'daytona: cwd and envs');
  });
  await step('daytona: files', async () => {
    await ds.fs.uploadFile(Buffer.from('daytona bytes'), 'up.txt');
    await ds.fs.uploadFile(Buffer.from([0, 255, 1]), '/tmp/d/bin');
    is((await ds.fs.downloadFile('up.txt')).toString(), 'daytona bytes', 'daytona: upload and download (relative path)');
    is(Array.from(await ds.fs.downloadFile('/tmp/d/bin')), [0, 255, 1], 'daytona: bytes round-trip (parents made)');
    await throws('daytona: a missing file raises an error', () => ds.fs.downloadFile('/tmp/missing'), (e) => /not|no such/i.test(e.message));
    const names = (await ds.fs.listFiles('/tmp')).map((f) => `${f.name}:${f.isDir}`).sort();
    ok(names.includes('d:true'), 'daytona: listFiles', JSON.stringify(names));
    const home = (await ds.fs.listFiles('/home/daytona')).map((f) => `${f.name}:${f.isDir}`).sort();
    ok(home.includes('up.txt:false'), 'daytona: a relative upload lands in the home, /home/daytona', JSON.stringify(home));
    is((await ds.fs.getFileDetails('/home/daytona/up.txt')).size, 13, 'daytona: getFileDetails');
    is((await ds.process.executeCommand('echo $HOME; pwd; id -un; cat up.txt')).result, '/home/daytona\n/home/daytona\ndaytona\ndaytona bytes',
      'daytona: HOME and the default cwd are the home, uid 1000 is daytona, and it sees the upload');
    is(await ds.getUserHomeDir(), '/home/daytona', 'daytona: getUserHomeDir');
    await ds.fs.createFolder('/tmp/fold', '755');
    await ds.fs.moveFiles('/home/daytona/up.txt', '/tmp/fold/up2.txt');
    is((await ds.fs.downloadFile('/tmp/fold/up2.txt')).toString(), 'daytona bytes', 'daytona: createFolder and moveFiles');
    await ds.fs.deleteFile('/tmp/fold', true);
    is((await ds.fs.listFiles('/tmp')).some((f) => f.name === 'fold'), false, 'daytona: deleteFile');
  });
  await step('daytona: codeRun', async () => {
    const r = await ds.process.codeRun('import sys\nprint(6 * 7, sys.argv[1:])', { argv: ['a'] });
    is([r.exitCode, r.result], [0, "42 ['a']\n"], 'daytona: codeRun runs python, with argv');
    is((await ds.process.codeRun('raise SystemExit(3)')).exitCode, 3, 'daytona: codeRun gives the exit code');
  });
  await step('daytona: pty', async () => {
    const dec = new TextDecoder();
    let out = '', out2 = '';
    const until = async (get, s, ms = 8000) => { for (let t = 0; t < ms / 50 && !get().includes(s); t++) await new Promise((r) => setTimeout(r, 50)); return get().includes(s); };
    const h = await ds.process.createPty({ id: 'term1', cols: 100, rows: 30, envs: { PTY_VAR: 'pv' }, onData: (d) => { out += dec.decode(d); } });
    ok(h.isConnected(), 'daytona: createPty connects (the "connected" control message)');
    await h.sendInput('tty; stty size; echo "dy-$((6*7)) $PTY_VAR"\n');
    ok(await until(() => out, 'dy-42 pv'), 'daytona: sendInput in, onData out, with the envs', out.slice(-300));
    ok(/\/dev\/pts\/\d+/.test(out) && out.includes('30 100'), "daytona: the sandbox's own PTY, of the size asked", out.slice(-300));
    await h.resize(120, 40);
    await h.sendInput('stty size\n');
    ok(await until(() => out, '40 120'), 'daytona: resize', out.slice(-200));
    const list = await ds.process.listPtySessions();
    ok(list.some((x) => x.id === 'term1' && x.active && x.cols === 120), 'daytona: listPtySessions', JSON.stringify(list));
    const info = await ds.process.getPtySessionInfo('term1');
    is([info.id, info.active, info.rows], ['term1', true, 40], 'daytona: getPtySessionInfo');
    await h.disconnect();
    const h2 = await ds.process.connectPty('term1', { onData: (d) => { out2 += dec.decode(d); } });
    await h2.sendInput('echo back-$((1+1)); exit 6\n');
    ok(await until(() => out2, 'back-2'), 'daytona: connectPty after a disconnect: the terminal lived on', out2.slice(-200));
    const r = await h2.wait();
    is(r.exitCode, 6, 'daytona: wait() gives the shell\'s exit code');
    is((await ds.process.getPtySessionInfo('term1')).active, false, 'daytona: an ended session is listed inactive');
    await ds.process.killPtySession('term1');
    await throws('daytona: getPtySessionInfo of a deleted session raises', () => ds.process.getPtySessionInfo('term1'), (e) => /not found/i.test(e.message));
    await throws('daytona: connectPty to an unknown session fails', () => ds.process.connectPty('nope', { onData: () => {} }), (e) => !!e);
    await throws('daytona: createPty with a bad id fails', () => ds.process.createPty({ id: 'bad id!', onData: () => {} }), (e) => !!e);
    const h3 = await ds.process.createPty({ id: 'term2', onData: () => {} });
    await throws('daytona: createPty with a taken id fails', () => ds.process.createPty({ id: 'term2', onData: () => {} }), (e) => !!e);
    await h3.kill();
    await throws('daytona: resizePtySession of a deleted session fails', () => ds.process.resizePtySession('term2', 10, 10), (e) => /not found/i.test(e.message));
  });
  await step('daytona: sessions', async () => {
    await ds.process.createSession('s1');
    const a = await ds.process.executeSessionCommand('s1', { command: 'cd /tmp && export SV=kept && mkdir -p sess' });
    is(a.exitCode, 0, 'daytona: executeSessionCommand runs a command');
    const b = await ds.process.executeSessionCommand('s1', { command: 'pwd; echo "$SV $SBX_DAYTONA"; echo err >&2; printf tail' });
    is([b.exitCode, b.stdout, b.stderr], [0, '/tmp\nkept dv\ntail', 'err\n'], 'daytona: cd and exports persist between commands; stdout and stderr apart');
    const c = await ds.process.executeSessionCommand('s1', { command: "f() { return 7; }; echo 'it''s' \"q\"; f" });
    is([c.exitCode, c.stdout], [7, "its q\n"], 'daytona: quotes survive, the exit code is the command\'s');
    const asy = await ds.process.executeSessionCommand('s1', { command: 'read line; echo "got $line"; sleep 0.3; echo done; exit_code=3; (exit 3)', runAsync: true });
    ok(typeof asy.cmdId === 'string' && asy.exitCode === undefined, 'daytona: runAsync answers at once with a cmdId', JSON.stringify(asy));
    const running = await ds.process.getSessionCommand('s1', asy.cmdId);
    ok(running.exitCode === undefined || running.exitCode === null, 'daytona: a running command has no exit code yet', JSON.stringify(running));
    let streamed = '', streamedErr = '';
    const follow = ds.process.getSessionCommandLogs('s1', asy.cmdId, (o) => { streamed += o; }, (e) => { streamedErr += e; });
    await ds.process.sendSessionCommandInput('s1', asy.cmdId, 'hello\n');
    await follow;
    is(streamed, 'got hello\ndone\n', 'daytona: sendSessionCommandInput reaches the command; logs streamed to the end');
    const done = await ds.process.getSessionCommand('s1', asy.cmdId);
    is([done.command.startsWith('read line'), done.exitCode], [true, 3], 'daytona: getSessionCommand after the end');
    const logs = await ds.process.getSessionCommandLogs('s1', asy.cmdId);
    is([logs.stdout, logs.stderr], ['got hello\ndone\n', ''], 'daytona: getSessionCommandLogs');
    let again = '';
    await ds.process.getSessionCommandLogs('s1', asy.cmdId, (o) => { again += o; }, () => {});
    is(again, 'got hello\ndone\n', 'daytona: following an ended command replays its logs and ends');
    const sess = await ds.process.getSession('s1');
    is([sess.sessionId, sess.commands.length, sess.commands[1].exitCode], ['s1', 4, 0], 'daytona: getSession lists its commands');
    ok((await ds.process.listSessions()).some((x) => x.sessionId === 's1'), 'daytona: listSessions');
    const ep = await ds.process.getEntrypointSession();
    is(ep.sessionId, 'entrypoint', 'daytona: getEntrypointSession (sandboxer sandboxes have no entrypoint: none ran)');
    is((await ds.process.getEntrypointLogs()).output, '', 'daytona: getEntrypointLogs');
    await ds.process.createSession('s2');
    const ex = await ds.process.executeSessionCommand('s2', { command: 'echo bye; exit 4' });
    is([ex.exitCode, ex.stdout], [4, 'bye\n'], 'daytona: a command that ends the shell ends with its code');
    await throws('daytona: a session whose shell has ended answers 410', () => ds.process.executeSessionCommand('s2', { command: 'true' }), (e) => /has ended/.test(e.message) && e.statusCode === 410);
    await ds.process.deleteSession('s2');
    await throws('daytona: createSession with a taken id fails', () => ds.process.createSession('s1'), (e) => /exists/.test(e.message));
    await throws('daytona: a command in an unknown session fails', () => ds.process.executeSessionCommand('nope', { command: 'true' }), (e) => /not found/.test(e.message));
    await throws('daytona: an unknown command id fails', () => ds.process.getSessionCommand('s1', 'nope'), (e) => /not found/.test(e.message));
    await ds.process.deleteSession('s1');
    await throws('daytona: getSession after deleteSession fails', () => ds.process.getSession('s1'), (e) => /not found/.test(e.message));
  });
  await step('daytona: codeInterpreter', async () => {
    const r1 = await ds.codeInterpreter.runCode('x = 6 * 7\nprint("x is", x)');
    is([r1.stdout, r1.stderr, r1.error], ['x is 42\n', '', undefined], 'daytona: runCode prints');
    const r2 = await ds.codeInterpreter.runCode('import sys\nprint(x + 1)\nprint("warn", file=sys.stderr)');
    is([r2.stdout, r2.stderr], ['43\n', 'warn\n'], 'daytona: the default context keeps its names between runs');
    const chunks = [];
    const r3 = await ds.codeInterpreter.runCode('import os\nprint(os.environ["RUN_VAR"])\n1/0', { envs: { RUN_VAR: 'rv' }, onStdout: (m) => chunks.push(m.output) });
    is([r3.stdout, chunks.join(''), r3.error && r3.error.name, r3.error && /ZeroDivisionError/.test(r3.error.traceback)], ['rv\n', 'rv\n', 'ZeroDivisionError', true], 'daytona: envs, streamed output and the error with its traceback');
    const ctx = await ds.codeInterpreter.createContext('/tmp');
    ok(ctx.id && ctx.cwd === '/tmp' && ctx.language === 'python', 'daytona: createContext', JSON.stringify(ctx));
    const r4 = await ds.codeInterpreter.runCode('import os\nprint(os.getcwd(), "x" in globals())', { context: ctx });
    is(r4.stdout, '/tmp False\n', 'daytona: a context of its own: its cwd, its own names');
    ok((await ds.codeInterpreter.listContexts()).some((c) => c.id === ctx.id), 'daytona: listContexts');
    await throws('daytona: runCode past its timeout is interrupted', () => ds.codeInterpreter.runCode('import time\ntime.sleep(30)', { context: ctx, timeout: 1 }), (e) => /timed out/i.test(e.message));
    is((await ds.codeInterpreter.runCode('print("still here")', { context: ctx })).stdout, 'still here\n', 'daytona: the context lives on after an interrupted run');
    await ds.codeInterpreter.deleteContext(ctx);
    ok(!(await ds.codeInterpreter.listContexts()).some((c) => c.id === ctx.id), 'daytona: deleteContext');
    await throws('daytona: runCode in a deleted context fails', () => ds.codeInterpreter.runCode('1', { context: ctx }), (e) => /not found/.test(e.message));
  });
  await step('daytona: preview links', async () => {
    await ds.fs.uploadFile(Buffer.from('daytona page'), '/home/daytona/web/index.html');
    await ds.process.createSession('web');
    await ds.process.executeSessionCommand('web', { command: 'cd /home/daytona/web && python3 -m http.server 4000 --bind 127.0.0.1', runAsync: true });
    const link = await ds.getPreviewLink(4000);
    is(link.url, `http://4000-${ds.id}.${DOMAIN}/`, 'daytona: getPreviewLink names PORT-ID.DOMAIN');
    ok(typeof link.token === 'string' && link.token.length === 32, 'daytona: with its preview token', link.token);
    let r = { status: 0 };
    for (let i = 0; i < 100 && r.status !== 200; i++) {
      r = await viaHost(new URL(link.url).host, '/', { 'x-daytona-preview-token': link.token });
      if (r.status !== 200) await new Promise((res) => setTimeout(res, 50));
    }
    is([r.status, r.body], [200, 'daytona page'], 'daytona: the preview link with x-daytona-preview-token reaches the server');
    is((await viaHost(new URL(link.url).host, '/')).status, 401, 'daytona: without the token: 401');
    const signed = await ds.getSignedPreviewUrl(4000, 30);
    ok(signed.url.includes('/v1/p/') && signed.port === 4000, 'daytona: getSignedPreviewUrl', JSON.stringify(signed));
    r = await fetch(signed.url);
    is([r.status, await r.text()], [200, 'daytona page'], 'daytona: a signed preview URL needs nothing else');
    await ds.expireSignedPreviewUrl(4000, signed.token);
    is((await fetch(signed.url)).status, 403, 'daytona: expireSignedPreviewUrl: it answers 403 from then');
    await throws('daytona: a port out of range is refused', () => ds.getPreviewLink(70000), (e) => /65535/.test(e.message));
    await ds.process.deleteSession('web');
  });
  await step('daytona: git', async () => {
    const origin = '/home/daytona/origin.git', work = '/home/daytona/work', other = '/home/daytona/other';
    await ds.git.init(origin, true, 'main');
    await ds.git.clone(`file://${origin}`, work);
    await ds.fs.uploadFile(Buffer.from('hello\n'), `${work}/README.md`);
    let st = await ds.git.status(work);
    is(st.fileStatus.map((f) => [f.name, f.worktree]), [['README.md', 'Untracked']], 'daytona: git.status sees an untracked file');
    await ds.git.add(work, ['README.md']);
    st = await ds.git.status(work);
    is([st.currentBranch, st.fileStatus[0] && st.fileStatus[0].staging], ['main', 'Added'], 'daytona: git.add stages it; the branch the bare repository names');
    const c = await ds.git.commit(work, 'first commit', 'Ann Author', 'ann@example.com');
    ok(/^[0-9a-f]{40}$/.test(c.sha), 'daytona: git.commit answers the hash', c.sha);
    await ds.git.push(work, undefined, undefined, 'main', 'origin', true);
    const h = await (await fetch(`${BASE}/api/toolbox/${ds.id}/git/history?path=${encodeURIComponent(work)}`, { headers: { Authorization: `Bearer ${KEY}` } })).json();
    is([h.length, h[0] && h[0].hash, h[0] && h[0].author, h[0] && h[0].message], [1, c.sha, 'Ann Author', 'first commit'], 'daytona: the history');
    await ds.git.clone(`file://${origin}`, other, 'main');
    is((await ds.fs.downloadFile(`${other}/README.md`)).toString(), 'hello\n', 'daytona: push went to the bare repository: a second clone has the commit');
    await ds.git.createBranch(work, 'feature');
    await ds.git.checkoutBranch(work, 'feature');
    let b = await ds.git.branches(work);
    is([b.branches.sort(), b.current], [['feature', 'main'], 'feature'], 'daytona: createBranch, checkoutBranch, branches');
    await ds.git.checkoutBranch(work, 'main');
    await ds.git.deleteBranch(work, 'feature');
    is((await ds.git.branches(work)).branches, ['main'], 'daytona: deleteBranch');
    await ds.fs.uploadFile(Buffer.from('more\n'), `${other}/more.txt`);
    await ds.git.add(other, ['more.txt']);
    await ds.git.commit(other, 'second', 'Bo', 'bo@example.com');
    await ds.git.push(other);
    await ds.git.pull(work);
    is((await ds.fs.downloadFile(`${work}/more.txt`)).toString(), 'more\n', 'daytona: git.pull brings the other clone\'s commit');
    is((await ds.git.remotes(work)).remotes, [{ name: 'origin', url: `file://${origin}` }], 'daytona: git.remotes');
    await ds.git.remoteAdd(work, 'mirror', other);
    is(await ds.git.remoteGet(work, 'mirror'), other, 'daytona: remoteAdd, remoteGet');
    await ds.git.setConfig('core.editor', 'true');
    is(await ds.git.getConfig('core.editor'), 'true', 'daytona: setConfig, getConfig (global: the sandbox\'s home)');
    await ds.git.configureUser('Cy', 'cy@example.com', 'local', work);
    is(await ds.git.getConfig('user.email', 'local', work), 'cy@example.com', 'daytona: configureUser (local)');
    await ds.fs.uploadFile(Buffer.from('changed\n'), `${work}/README.md`);
    await ds.git.restore(work, ['README.md'], false, true);
    is((await ds.fs.downloadFile(`${work}/README.md`)).toString(), 'hello\n', 'daytona: git.restore');
    await ds.git.reset(work, 'hard', 'HEAD~1');
    is((await ds.git.status(work)).ahead, 0, 'daytona: git.reset --hard');
    await throws('daytona: git.status of a directory that is no repository', () => ds.git.status('/tmp'), (e) => /not a git repository/.test(e.message));
    await throws('daytona: git.clone of a remote that is not there', () => ds.git.clone('file:///nope.git', '/home/daytona/x'), (e) => /git:/.test(e.message));
    await throws('daytona: git.commit without an author', () => ds.git.commit(work, 'm', undefined, undefined), (e) => /author/.test(e.message));
    await throws('daytona: git.setConfig with scope system', () => ds.git.setConfig('a.b', 'c', 'system'), (e) => /scope/.test(e.message));
  });
  await step('daytona: labels, env, ttl and signed file URLs', async () => {
    is(await ds.setLabels({ suite: 'compat-daytona', extra: 'e' }), { suite: 'compat-daytona', extra: 'e' }, 'daytona: setLabels');
    is((await daytona.get(ds.id)).labels.extra, 'e', 'daytona: the labels are the record\'s metadata');
    await ds.updateEnv({ NEWV: 'nv' });
    is((await ds.process.executeCommand('echo "$NEWV $SBX_DAYTONA"')).result, 'nv dv\n', 'daytona: updateEnv adds to the sandbox-wide environment');
    await ds.updateEnv({}, { unset: ['NEWV'] });
    is((await ds.process.executeCommand('echo "[$NEWV]"')).result, '[]\n', 'daytona: updateEnv unsets');
    await ds.setTtl(30);
    await ds.fs.uploadFile(Buffer.from('signed'), '/home/daytona/sf.txt');
    const d = await ds.downloadUrl('/home/daytona/sf.txt', 60);
    let r = await fetch(d);
    is([r.status, await r.text()], [200, 'signed'], 'daytona: downloadUrl needs no credentials');
    r = await fetch(await ds.uploadUrl('/home/daytona/up.txt', 60), { method: 'POST', body: 'raw up' });
    is(r.status, 200, 'daytona: uploadUrl takes a raw body');
    is((await ds.fs.downloadFile('/home/daytona/up.txt')).toString(), 'raw up', 'daytona: ...and it is there');
    const alt = new URL(d);
    alt.searchParams.set('path', '/home/daytona/up.txt');
    is((await fetch(alt)).status, 403, 'daytona: a signed URL for another path: 403');
    const old = new URL(d);
    old.searchParams.set('expires', String(Math.floor(Date.now() / 1000) - 5));
    is((await fetch(old)).status, 403, 'daytona: a changed expiry: 403');
    await ds.rotateSigningKey();
    is((await fetch(d)).status, 403, 'daytona: after rotateSigningKey the old URL answers 403');
    const h = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
    for (const [what, url, init] of [['labels that are not an object', `/api/sandbox/${ds.id}/labels`, { method: 'PUT', body: '{"labels": 3}' }],
      ['labels with a non-string value', `/api/sandbox/${ds.id}/labels`, { method: 'PUT', body: '{"labels": {"a": 1}}' }],
      ['a ttl that is not a number', `/api/sandbox/${ds.id}/ttl/abc`, { method: 'POST' }],
      ['env with set not an object', `/api/toolbox/${ds.id}/env`, { method: 'POST', body: '{"set": []}' }]]) {
      const rr = await fetch(BASE + url, { headers: h, ...init });
      const j = await rr.json().catch(() => ({}));
      ok(rr.status === 400 && typeof j.message === 'string', `daytona: ${what}: 400 with a message`, JSON.stringify([rr.status, j]));
    }
  });
  await step('daytona: file tools', async () => {
    await ds.fs.uploadFile(Buffer.from('alpha beta\ngamma alpha\n'), '/tmp/tools/a.txt');
    await ds.fs.uploadFile(Buffer.from('nothing here\n'), '/tmp/tools/sub/b.md');
    const found = await ds.fs.findFiles('/tmp/tools', 'alpha');
    is(found.map((m) => [m.file, m.line, m.content]), [['/tmp/tools/a.txt', 1, 'alpha beta'], ['/tmp/tools/a.txt', 2, 'gamma alpha']], 'daytona: findFiles (file, line, content)');
    is(await ds.fs.findFiles('/tmp/tools', 'zeta'), [], 'daytona: findFiles with no match is empty');
    is((await ds.fs.searchFiles('/tmp/tools', '*.md')).files, ['/tmp/tools/sub/b.md'], 'daytona: searchFiles by a glob on names');
    const rr = await ds.fs.replaceInFiles(['/tmp/tools/a.txt', '/tmp/tools/none.txt'], 'alpha', 'omega');
    is(rr.map((x) => [x.file, x.success]), [['/tmp/tools/a.txt', true], ['/tmp/tools/none.txt', false]], 'daytona: replaceInFiles, a missing file failing alone');
    is((await ds.fs.downloadFile('/tmp/tools/a.txt')).toString(), 'omega beta\ngamma omega\n', 'daytona: the replacement is in the file');
    await ds.fs.setFilePermissions('/tmp/tools/a.txt', { mode: '600' });
    is((await ds.process.executeCommand('stat -c %a /tmp/tools/a.txt')).result, '600\n', 'daytona: setFilePermissions mode');
    await throws('daytona: setFilePermissions to another owner is refused (one user in the sandbox)',
      () => ds.fs.setFilePermissions('/tmp/tools/a.txt', { owner: 'root' }), (e) => /one user/.test(e.message));
    await throws('daytona: a bad mode is refused', () => ds.fs.setFilePermissions('/tmp/tools/a.txt', { mode: 'rwx' }), (e) => /octal/.test(e.message));
  });
  await step('daytona: file tools refuse bad input', async () => {
    const tb = `${BASE}/api/toolbox/${ds.id}`, h = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
    for (const [what, url, init] of [
      ['find without a pattern', '/files/find?path=/tmp', {}],
      ['search without a pattern', '/files/search?path=/tmp', {}],
      ['replace with a body that is not {files, pattern, newValue}', '/files/replace', { method: 'POST', body: '{"files": "a", "pattern": 3}' }],
      ['replace with malformed JSON', '/files/replace', { method: 'POST', body: '{nope' }],
      ['permissions on a missing path', '/files/permissions?path=/tmp/none&mode=644', { method: 'POST' }],
      ['code-run without code', '/process/code-run', { method: 'POST', body: '{"language": "python"}' }],
      ['code-run in a language it has no interpreter for', '/process/code-run', { method: 'POST', body: '{"code": "1", "language": "cobol"}' }],
      ['code-run with argv not a list', '/process/code-run', { method: 'POST', body: '{"code": "1", "language": "python", "argv": "x"}' }],
      ['pty create with malformed JSON', '/process/pty', { method: 'POST', body: '{nope' }],
      ['pty create with cols 0', '/process/pty', { method: 'POST', body: '{"id": "z", "cols": 0}' }],
      ['pty resize with rows 99999', '/process/pty/none/resize', { method: 'POST', body: '{"cols": 10, "rows": 99999}' }],
      ['pty create-connect without an upgrade', '/process/pty/create-connect?id=w', {}],
      ['session create with malformed JSON', '/process/session', { method: 'POST', body: '{nope' }],
      ['session create with a bad id', '/process/session', { method: 'POST', body: '{"sessionId": "a b"}' }],
      ['session exec in an unknown session', '/process/session/none/exec', { method: 'POST', body: '{"command": "true"}' }],
      ['interpreter context in another language', '/process/interpreter/context', { method: 'POST', body: '{"language": "ruby"}' }],
      ['interpreter execute without an upgrade', '/process/interpreter/execute', {}],
    ]) {
      const r = await fetch(tb + url, { headers: h, ...init });
      const j = await r.json().catch(() => ({}));
      ok((r.status === 400 || r.status === 404 || r.status === 426) && typeof j.message === 'string' && j.message.length > 10,
        `daytona: ${what}: ${r.status} with a message`, JSON.stringify([r.status, j]));
    }
  });
  await step('daytona: get, list, autostop', async () => {
    const got = await daytona.get(ds.id);
    is([got.id, got.state, got.labels.suite], [ds.id, 'started', 'compat-daytona'], 'daytona: get');
    const ids = [];
    for await (const s of daytona.list({ labels: { suite: 'compat-daytona' } })) ids.push(s.id);
    ok(ids.includes(ds.id), 'daytona: list by label', JSON.stringify(ids));
    await ds.setAutostopInterval(60);
    ok(true, 'daytona: setAutostopInterval');
  });
  await step('daytona: delete', async () => {
    await ds.delete();
    is(ds.state, 'destroyed', 'daytona: delete');
    const rec = await (await native('GET', `/v1/sandboxes/${ds.id}`)).json();
    is(rec.state, 'destroyed', 'daytona: the native record says destroyed');
    await throws('daytona: the toolbox of a deleted sandbox refuses', () => ds.process.executeCommand('true'), (e) => /not found/i.test(e.message));
  });
}

// ---- Daytona's network settings: at create and updateNetworkSettings (docs/network.md) -----------
await step('daytona: network settings', async () => {
  await throws('daytona: an allow list outside the policy is refused, naming it', () => daytona.create({ domainAllowList: 'evil.example.org' }), (e) => /egress_allowed/.test(e.message));
  await throws('daytona: an upstream proxy is refused by name', () => daytona.create({ outboundProxyUrl: 'http://127.0.0.1:9/' }), (e) => /outboundProxyUrl/.test(e.message));
  const d = await daytona.create({ networkBlockAll: true });
  try {
    is([d.networkBlockAll, d.networkAllowList ?? null], [true, null], 'daytona: networkBlockAll at create, on the sandbox');
    const r = await d.process.executeCommand('curl -sS -o /dev/null -w %{http_code} http://blocked.example.test/; true');
    is(r.result, '403', 'daytona: a blocked sandbox has the proxy, which refuses (HTTP 403)');
    await throws('daytona: updateNetworkSettings outside the policy is refused', () => d.updateNetworkSettings({ domainAllowList: 'evil.example.org' }), (e) => /egress_allowed/.test(e.message));
    await d.updateNetworkSettings({ networkBlockAll: false });
    const x = await (await native('GET', `/v1/sandboxes/${d.id}`)).json();
    is(x.network, { egress: [], egress_deny: [] }, 'daytona: networkBlockAll: false clears the rules (the profile\'s deny is what remains)');
  } finally { await d.delete(); }
});

// ---- the two flows an agent does, end to end, each in a sandbox of its own ---------------------
await step('flow: E2B', async () => {
  const s = await Sandbox.create();
  await s.files.write('/home/user/app/make.py', 'import json\njson.dump({"sum": sum(range(10))}, open("/home/user/app/out.json", "w"))\nprint("made")\n');
  is((await s.commands.run('cd /home/user/app && python3 make.py')).stdout, 'made\n', 'flow e2b: a script written under /home/user runs');
  is(JSON.parse(await s.files.read('/home/user/app/out.json')), { sum: 45 }, 'flow e2b: its output file is read back');
  await s.files.write('/home/user/app/index.html', '<p>dev</p>');
  const dev = await s.commands.run('cd /home/user/app && python3 -m http.server 8080 --bind 127.0.0.1', { background: true, timeoutMs: 0 });
  let r = { status: 0 };
  for (let i = 0; i < 100 && r.status !== 200; i++) {
    r = await viaHost(s.getHost(8080), '/index.html', { 'e2b-traffic-access-token': s.trafficAccessToken });
    if (r.status !== 200) await new Promise((res) => setTimeout(res, 50));
  }
  is([r.status, r.body], [200, '<p>dev</p>'], 'flow e2b: the dev server answers through getHost');
  let out = '';
  const t = await s.pty.create({ cols: 80, rows: 24, onData: (d) => { out += new TextDecoder().decode(d); } });
  await s.pty.sendInput(t.pid, new TextEncoder().encode('echo flow-$((40+2))\n'));
  for (let i = 0; i < 100 && !out.includes('flow-42'); i++) await new Promise((res) => setTimeout(res, 50));
  ok(out.includes('flow-42'), 'flow e2b: a PTY echo', out.slice(-200));
  await dev.kill();
  await s.kill();
});
await step('flow: Daytona', async () => {
  const d = await daytona.create();
  const cr = await d.process.codeRun('print(sum(range(10)))');
  is([cr.exitCode, cr.result], [0, '45\n'], 'flow daytona: codeRun');
  await d.process.createSession('work');
  await d.process.executeSessionCommand('work', { command: 'mkdir -p /home/daytona/proj && cd /home/daytona/proj' });
  is((await d.process.executeSessionCommand('work', { command: 'pwd' })).stdout, '/home/daytona/proj\n', 'flow daytona: a session where cd persists');
  await d.git.init('/home/daytona/up.git', true, 'main');
  await d.git.clone('file:///home/daytona/up.git', '/home/daytona/proj/repo');
  await d.fs.uploadFile(Buffer.from('print("hi")\n'), '/home/daytona/proj/repo/main.py');
  await d.git.add('/home/daytona/proj/repo', ['main.py']);
  const c = await d.git.commit('/home/daytona/proj/repo', 'add main', 'Agent', 'agent@example.com');
  ok(/^[0-9a-f]{40}$/.test(c.sha), 'flow daytona: git clone → commit', c.sha);
  await d.process.executeSessionCommand('work', { command: 'cd repo && python3 -m http.server 9090 --bind 127.0.0.1', runAsync: true });
  const link = await d.getPreviewLink(9090);
  let r = { status: 0 };
  for (let i = 0; i < 100 && r.status !== 200; i++) {
    r = await viaHost(new URL(link.url).host, '/main.py', { 'x-daytona-preview-token': link.token });
    if (r.status !== 200) await new Promise((res) => setTimeout(res, 50));
  }
  is([r.status, r.body], [200, 'print("hi")\n'], 'flow daytona: the preview link reaches the server the session started');
  await d.delete();
});

// pause and restart-free persistence through both SDKs: a counter frozen by pause, going on after connect/start
await step('persistence: E2B pause → connect, Daytona stop → start', async () => {
  const probe = await Sandbox.create({ timeoutMs: 60000 });
  let why = null;
  try { await probe.pause(); } catch (e) { why = e.message; }
  await Sandbox.kill(probe.sandboxId);
  if (why) { console.log(`ok ${++n} # SKIP pause: ${why.slice(0, 150)}`); return; }
  const e = await Sandbox.create({ timeoutMs: 120000 });
  await e.commands.run('i=0; while :; do i=$((i+1)); echo $i > /tmp/c; sleep 0.1; done', { background: true });
  await new Promise((r) => setTimeout(r, 600));
  is(await e.pause(), true, 'e2b: pause answers true');
  const frozen = (await (await native('GET', `/v1/sandboxes/${e.sandboxId}`)).json()).state;
  await new Promise((r) => setTimeout(r, 800));
  await e.connect();
  const c1 = Number((await e.commands.run('cat /tmp/c')).stdout);
  is(frozen, 'paused', 'e2b: the native record says paused');
  ok(c1 > 0 && c1 < 12, `e2b: connect resumed it, and the counter went on from where it stopped (${c1})`);
  await e.kill();
  const d = await daytona.create();
  await d.fs.uploadFile(Buffer.from('kept'), '/home/daytona/k.txt');
  await d.stop();
  is(d.state, 'stopped', 'daytona: stop → stopped');
  await d.start();
  is([d.state, (await d.fs.downloadFile('/home/daytona/k.txt')).toString()], ['started', 'kept'], 'daytona: start → started, its files there');
  await d.setAutoArchiveInterval(90);
  const arec = await (await native('GET', `/v1/sandboxes/${d.id}`)).json();
  is([arec.on_paused_max, arec.ttl_paused_s], ['snapshot', 5400], 'daytona: setAutoArchiveInterval → the native paused cap keeps a snapshot (on_paused_max)');
  await d.recover();
  is(d.state, 'started', 'daytona: recover of a sandbox not in error: nothing to do, it runs on');
  await d.delete();
});

// volumes (root only: a loop-mounted image each)
if (process.getuid && process.getuid() === 0) {
  await step('volumes: E2B Volume and Daytona volume', async () => {
    const { Volume } = await import('e2b');
    const v = await Volume.create('e2b-vol');
    ok(/^vol_/.test(v.volumeId), 'e2b: Volume.create');
    is((await Volume.list()).some((x) => x.volumeId === v.volumeId), true, 'e2b: Volume.list');
    is((await Volume.getInfo(v.volumeId)).name, 'e2b-vol', 'e2b: Volume.getInfo');
    const a = await Sandbox.create({ volumeMounts: { '/mnt/vol': v } });
    await a.commands.run('echo shared > /mnt/vol/f');
    // the content API: the volume's files without a sandbox, by the volume's own token
    const c = await Volume.connect(v.volumeId);
    is(await c.readFile('/f'), 'shared\n', 'e2b: Volume#readFile reads what a sandbox wrote');
    const w = await c.writeFile('/notes/today.txt', 'from the SDK');
    is([w.type, w.size, w.path], ['file', 12, '/notes/today.txt'], 'e2b: Volume#writeFile (its parents made)');
    is((await a.commands.run('cat /mnt/vol/notes/today.txt')).stdout, 'from the SDK', 'e2b: the sandbox sees it at once');
    is(Array.from(await c.readFile('/notes/today.txt', { format: 'bytes' })).length, 12, "e2b: Volume#readFile format 'bytes'");
    is((await c.list('/')).map((e) => e.name).sort(), ['f', 'lost+found', 'notes'], 'e2b: Volume#list');
    is((await c.makeDir('/deep/er', { force: true })).type, 'directory', 'e2b: Volume#makeDir (force: parents)');
    is([await c.exists('/deep/er'), await c.exists('/nope')], [true, false], 'e2b: Volume#exists');
    const st = await c.getInfo('/f');
    ok(st.type === 'file' && st.size === 7 && st.mtime instanceof Date, 'e2b: Volume#getInfo');
    is((await c.updateMetadata('/f', { mode: 0o600 })).mode, 0o600, 'e2b: Volume#updateMetadata');
    await c.remove('/deep');
    is(await c.exists('/deep'), false, 'e2b: Volume#remove (a directory with what it holds)');
    await a.commands.run('ln -s /etc/hostname /mnt/vol/link');
    await c.readFile('/link').then(() => ok(false, 'e2b: a symlink a sandbox planted is not followed'),
      (e) => ok(/symbolic link/.test(e.message), 'e2b: a symlink a sandbox planted is not followed', e.message));
    const forged = new Volume(v.volumeId, v.name, 'vt_' + '0'.repeat(32));
    await forged.readFile('/f').then(() => ok(false, 'e2b: another token does not open the volume'),
      (e) => ok(/token/.test(e.message), 'e2b: another token does not open the volume', e.message));
    await a.kill();
    const dv = await daytona.volume.get('e2b-vol');
    is(dv.id, v.volumeId, 'daytona: volume.get by name (the same volume)');
    const d = await daytona.create({ volumes: [{ volumeId: dv.id, mountPath: '/data' }] });
    is((await d.process.executeCommand('cat /data/f')).result, 'shared\n', 'daytona: a sandbox mounting it reads what an E2B one wrote');
    await d.delete();
    is(await Volume.destroy(v.volumeId), true, 'e2b: Volume.destroy');
    is(await Volume.destroy(v.volumeId), false, 'e2b: Volume.destroy again: false');
  });
} else
  console.log(`ok ${++n} # SKIP volumes: root only (a loop-mounted image each)`);

// Daytona's archive outlives a restart of serve: the old id still names what its start makes, and
// the envVars wait for it (STATE/compat-daytona.json). Last: it restarts the server.
await step('persistence: across a restart of serve (E2B pause, Daytona stop and archive)', async () => {
  const d = await daytona.create({ envVars: { KEEP: 'me' } });
  await d.fs.uploadFile(Buffer.from('before'), '/home/daytona/r.txt');
  await d.archive();
  const oldId = d.id;
  // paused ones: a counter frozen, and files, kept by their supervisors while serve restarts
  let e = null, ds = null;
  const probe = await Sandbox.create({ timeoutMs: 60000 });
  const canPause = await probe.pause().then(() => true, () => false);
  await Sandbox.kill(probe.sandboxId);
  if (canPause) {
    e = await Sandbox.create({ timeoutMs: 120000 });
    await e.files.write('/home/user/kept.txt', 'kept');
    await e.commands.run('i=0; while :; do i=$((i+1)); echo $i > /tmp/c; sleep 0.1; done', { background: true });
    await new Promise((r) => setTimeout(r, 600));
    await e.pause();
    ds = await daytona.create();
    await ds.fs.uploadFile(Buffer.from('stopped'), '/home/daytona/s.txt');
    await ds.stop();
  }
  await stop('SIGKILL'); // a crash: what its supervisors keep, a new serve adopts
  const srv2 = await startServer(SBX, TMP);
  if (typeof srv2 === 'string') { ok(false, 'serve starts again', srv2); return; }
  try {
    if (e) {
      const e2 = await Sandbox.connect(e.sandboxId); // resumes it
      const c1 = Number((await e2.commands.run('cat /tmp/c')).stdout);
      await new Promise((r) => setTimeout(r, 500));
      const c2 = Number((await e2.commands.run('cat /tmp/c')).stdout);
      ok(c1 > 0 && c1 < 15 && c2 > c1, `e2b: paused across a restart of serve, connect resumes it: the counter went on from where it stopped (${c1}, then ${c2})`);
      is(await e2.files.read('/home/user/kept.txt'), 'kept', 'e2b: and its files are there');
      await e2.kill();
    } else console.log(`ok ${++n} # SKIP pause across a restart: this host cannot freeze this user's sandboxes`);
    const daytona2 = new Daytona({ apiKey: srv2.KEY, apiUrl: `${srv2.BASE}/api`, target: 'local' });
    if (ds) {
      const ds2 = await daytona2.get(ds.id);
      is(ds2.state, 'stopped', 'daytona: stopped across a restart of serve');
      await ds2.start();
      is((await ds2.fs.downloadFile('/home/daytona/s.txt')).toString(), 'stopped', 'daytona: start after the restart: its files');
      await ds2.delete();
    }
    const d2 = await daytona2.get(oldId);
    is(d2.state, 'archived', 'daytona: after a restart of serve the sandbox is still archived');
    await d2.start();
    is((await d2.fs.downloadFile('/home/daytona/r.txt')).toString(), 'before', 'daytona: start after the restart: its files, through the old id');
    is((await d2.process.executeCommand('echo $KEEP')).result, 'me\n', 'daytona: and its envVars');
    await d2.delete();
  } finally { await srv2.stop(); }
});

clearTimeout(watchdog);
await stop();
console.log(`1..${n}`);
if (failed) console.log(`# failed ${failed} of ${n}`);
process.exit(failed ? 1 : 0);
