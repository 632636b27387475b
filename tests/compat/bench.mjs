// bench.mjs — create → first commands.run('echo hi') result through the e2b SDK, next to the same
// through sandboxer's own API, p50/p90 over N (default 50). Against a running `sandboxer serve`:
//   E2B_API_KEY=TOKEN E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT node bench.mjs [N]
import { Sandbox } from 'e2b';
const N = Number(process.argv[2] || 50);
const BASE = process.env.E2B_API_URL, KEY = process.env.E2B_API_KEY;
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const h = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
const e2b = [], nat = [];
for (let i = 0; i < N; i++) {
  let t = performance.now();
  const sb = await Sandbox.create();
  const r = await sb.commands.run('echo hi');
  e2b.push(performance.now() - t);
  if (r.stdout !== 'hi\n') throw new Error('e2b: ' + JSON.stringify(r));
  await sb.kill();
  t = performance.now();
  const rec = await (await fetch(`${BASE}/v1/sandboxes`, { method: 'POST', headers: h, body: '{}' })).json();
  const ex = await (await fetch(`${BASE}/v1/sandboxes/${rec.id}/exec`, { method: 'POST', headers: h, body: JSON.stringify({ argv: ['/bin/bash', '-l', '-c', 'echo hi'] }) })).json();
  nat.push(performance.now() - t);
  if (ex.stdout !== 'hi\n') throw new Error('native: ' + JSON.stringify(ex));
  await fetch(`${BASE}/v1/sandboxes/${rec.id}`, { method: 'DELETE', headers: h });
}
const f = (a) => `p50 ${q(a, 0.5).toFixed(1)} ms, p90 ${q(a, 0.9).toFixed(1)} ms`;
console.log(`create -> first run('echo hi'), n=${N}\n  e2b SDK:        ${f(e2b)}\n  native HTTP API: ${f(nat)}`);
console.log(`  ratio of the p50s, e2b / native: ${(q(e2b, 0.5) / q(nat, 0.5)).toFixed(2)} (target: at most 1.2)`);
