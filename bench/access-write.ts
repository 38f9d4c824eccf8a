// CPU per write of a ~4 KB block of log lines to stdout, synchronous (fs.writeSync) against asynchronous (fs.write,
// through libuv's thread pool): why the access log's buffered writer writes synchronously.
//   node bench/access-write.ts [--writes 20000] | cat > /dev/null
import { fork } from 'node:child_process';
import { writeSync, write } from 'node:fs';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { writes: { type: 'string', default: '20000' }, mode: { type: 'string' } } });
const n = Number(values.writes);
const block = ('x'.repeat(380) + '\n').repeat(10);

async function run(mode: 'sync' | 'async'): Promise<number> {
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const s = block + String(i) + '\n';
    if (mode === 'sync') writeSync(1, s);
    else await new Promise<void>((resolve, reject) => write(1, s, null, 'utf8', (err) => (err ? reject(err) : resolve())));
  }
  const c = process.cpuUsage(t0);
  return (c.user + c.system) / n;
}

if (values.mode === 'sync' || values.mode === 'async') {
  // One mode per process: the thread pool the async side starts would otherwise sit beside the sync side.
  process.send!(await run(values.mode));
} else {
  const one = (mode: string) =>
    new Promise<number>((resolve) => {
      const child = fork(import.meta.filename, ['--mode', mode, '--writes', String(n)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      child.once('message', (m) => resolve(m as number));
    });
  const sync = await one('sync');
  const async = await one('async');
  process.stderr.write(`CPU per ${block.length}-byte write: sync ${sync.toFixed(1)} µs, async ${async.toFixed(1)} µs (${(async / sync).toFixed(1)}×)\n`);
}
