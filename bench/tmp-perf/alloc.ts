import { Pool } from 'undici';
import { chatBody } from '../load.ts';
import { startTollgate, startUpstream } from '../targets.ts';
import { freePort } from '../proc.ts';
const ip = await freePort();
const up = await startUpstream();
const tg = await startTollgate({ name: 'alloc', upstreamUrl: up.target.origin, nodeArgs: [`--inspect=127.0.0.1:${ip}`] });
const t = tg.target; const body = chatBody();
async function load(n: number) {
  const pool = new Pool(t.origin, { connections: 16 }); const headers = { 'content-type': 'application/json', ...t.headers };
  let sent = 0;
  await Promise.all(Array.from({ length: 16 }, async () => { while (sent < n) { sent++; const r = await pool.request({ path: t.chatPath, method: 'POST', headers, body }); await r.body.dump(); } }));
  await pool.close();
}
await load(3000);
const ws = ((await (await fetch(`http://127.0.0.1:${ip}/json/list`)).json()) as any)[0].webSocketDebuggerUrl;
const sock = new WebSocket(ws);
await new Promise((r) => sock.addEventListener('open', r, { once: true }));
let id = 0; const pending = new Map<number, (v: any) => void>();
sock.addEventListener('message', (e) => { const m = JSON.parse(String(e.data)); if (m.id && pending.has(m.id)) { pending.get(m.id)!(m.result); pending.delete(m.id); } });
const call = (method: string, params: object = {}) => new Promise<any>((r) => { const i = ++id; pending.set(i, r); sock.send(JSON.stringify({ id: i, method, params })); });
await call('HeapProfiler.enable');
await call('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
const N = 4000;
await load(N);
const { profile } = await call('HeapProfiler.stopSampling');
const agg = new Map<string, number>(); let total = 0;
const walk = (n: any, stack: string[]) => {
  const cf = n.callFrame; const name = `${cf.functionName || '(anon)'}@${cf.url.split('/').slice(-2).join('/')}:${cf.lineNumber + 1}`;
  const st = [...stack, name];
  if (n.selfSize) { total += n.selfSize; const k = st.slice(-3).reverse().join(' < '); agg.set(k, (agg.get(k) ?? 0) + n.selfSize); }
  for (const c of n.children) walk(c, st);
};
walk(profile.head, []);
console.log(`allocated ~${(total / N).toFixed(0)} bytes/request (sampled)`);
for (const [k, v] of [...agg].sort((a, b) => b[1] - a[1]).slice(0, 45)) console.log(String(Math.round(v / N)).padStart(6), k);
sock.close(); await tg.close(); await up.close();
