// lib.mjs — what the SDK suites share (run.mjs, coverage.mjs): a real `sandboxer serve` on
// loopback for one run (its own state and runtime dirs under SBX_TMP, a token per tenant, --domain
// for Host routing), the native API, and a GET naming another host (what DNS for the domain would
// do). SANDBOXER is the binary; POLICY, when set, the policy file for an unprivileged user.
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, openSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

export const DOMAIN = 'sbx.test';

// {BASE, port, KEY, OTHER, native, viaHost, stop, exited()}, or a string saying why not (skip).
export async function startServer(SBX, TMP) {
  const ST = path.join(TMP, 'state'), RUN = path.join(TMP, 'run');
  mkdirSync(ST, { recursive: true });
  mkdirSync(RUN, { recursive: true });
  const ENV = { ...process.env, SANDBOXER_STATE_DIR: ST, SANDBOXER_RUNTIME_DIR: RUN };
  const token = (name, tenant) => JSON.parse(execFileSync(SBX, ['token', 'create', '--actor', 'agt', '--name', name, '--tenant', tenant, '--json'], { env: ENV })).token;
  const KEY = token('compat', 'compat'), OTHER = token('other', 'elsewhere');
  const port = await new Promise((res) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
  const BASE = `http://127.0.0.1:${port}`;
  const args = ['serve', '--listen', `127.0.0.1:${port}`, '--stop-sandboxes', '--domain', DOMAIN];
  if (process.env.POLICY) args.push('--policy', process.env.POLICY);
  const log = openSync(path.join(TMP, 'serve.log'), 'a');
  const server = spawn(SBX, args, { env: ENV, stdio: ['ignore', log, log] });
  let exited = false;
  server.on('exit', () => { exited = true; });
  const stop = async (sig = 'SIGTERM') => { // SIGKILL: its sandboxes stay (--stop-sandboxes is TERM's)
    if (exited) return;
    server.kill(sig);
    for (let i = 0; i < 100 && !exited; i++) await new Promise((r) => setTimeout(r, 100));
    if (!exited) server.kill('SIGKILL');
    // volumes a failed step left (a volume stays mounted on the host until it is deleted)
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const mnt = line.split(' ')[1];
      if (mnt && mnt.startsWith(path.join(ST, 'volumes') + '/')) try { execFileSync('umount', ['-l', mnt]); } catch { /* gone */ }
    }
  };
  const native = (method, p, body) => fetch(BASE + p, { method, headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const viaHost = (host, p, headers = {}) => new Promise((resolve) => {
    const r = http.request({ host: '127.0.0.1', port, path: p, headers: { ...headers, Host: host } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString(), headers: res.headers }));
    });
    r.on('error', (e) => resolve({ status: 0, body: String(e), headers: {} }));
    r.end();
  });
  let up = false;
  for (let i = 0; i < 100 && !up && !exited; i++) {
    try { up = (await native('GET', '/healthz')).ok; } catch { await new Promise((r) => setTimeout(r, 100)); }
  }
  if (!up) {
    await stop();
    return 'sandboxer serve did not start (see serve.log)';
  }
  // A namespace backend is what these surfaces need: without one, say so (the caller skips).
  const r = await native('POST', '/v1/sandboxes', {});
  const rec = await r.json();
  if (r.status !== 201 || rec.backend === 'landlock') {
    await stop();
    return `no sandbox with a mount namespace here (${r.status} ${rec.backend || JSON.stringify(rec.error)})`;
  }
  await native('DELETE', `/v1/sandboxes/${rec.id}`);
  process.env.E2B_API_KEY = KEY;
  process.env.E2B_API_URL = BASE;
  process.env.E2B_SANDBOX_URL = BASE;
  process.env.E2B_VOLUME_API_URL = BASE; // the volume content API (Volume#readFile, …)
  return { BASE, port, KEY, OTHER, native, viaHost, stop, exited: () => exited };
}
