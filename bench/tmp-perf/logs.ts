import { startTollgate, startUpstream } from '../targets.ts';
import { chatBody } from '../load.ts';
const up = await startUpstream();
const tg = await startTollgate({ name: 'logs', upstreamUrl: up.target.origin });
for (let i = 0; i < 3; i++) { const r = await fetch(tg.target.origin + tg.target.chatPath, { method: 'POST', headers: { 'content-type': 'application/json', ...tg.target.headers }, body: chatBody() }); await r.text(); }
await new Promise((r) => setTimeout(r, 400));
const mid = tg.proc.logs().split('\n').filter((l) => l.includes('"msg":"request"')).length;
await tg.close();
console.log('access lines after 400 ms:', mid, '; after stop:', tg.proc.logs().split('\n').filter((l) => l.includes('"msg":"request"')).length);
console.log(tg.proc.logs().split('\n').filter((l) => l.includes('"msg":"request"'))[0]);
await up.close();
