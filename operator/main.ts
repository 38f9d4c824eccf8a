// tollgate operator entry: `node operator/main.ts [--namespace NS]`. In-cluster config when running in a pod,
// else KUBECONFIG (or ~/.kube/config). Compiles the namespace's tollgate.dev resources into the gateway snapshot.
import { KubeConfig } from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { startOperator } from './operator.ts';
import { adminPortFromEnv } from '../gateway/telemetry/config.ts';
import { startOperatorTelemetry } from './metrics.ts';

const { values } = parseArgs({ options: { namespace: { type: 'string' }, 'lease-name': { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
if (values.help) {
  console.log('usage: node operator/main.ts [--namespace NS] [--lease-name NAME]\nEnvironment: TOLLGATE_NAMESPACE (else POD_NAMESPACE), POD_NAME, KUBECONFIG, LOG_LEVEL, TOLLGATE_LEASE_DURATION_SECONDS, TOLLGATE_RENEW_DEADLINE_SECONDS, TOLLGATE_RETRY_PERIOD_SECONDS, TOLLGATE_LEADER_ELECTION (false: lead without a Lease; one replica only), TOLLGATE_METRICS_PORT, TOLLGATE_SNAPSHOT_NAMESPACE (where snapshot Secrets and gateway reports live; default: the watched namespace).');
  process.exit(0);
}
const kc = new KubeConfig();
if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
else kc.loadFromDefault();
const env = process.env;
const namespace = values.namespace ?? env.TOLLGATE_NAMESPACE ?? env.POD_NAMESPACE ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
const log = pino({ level: env.LOG_LEVEL ?? 'info' });
// /metrics on TOLLGATE_ADMIN_PORT (default 9464), as on the gateway.
const telemetry = await startOperatorTelemetry({ adminPort: adminPortFromEnv(), log });
// The chart sets these; unset, the elector keeps client-go's defaults (15 s lease, 10 s renew deadline, 2 s retry).
const seconds = (v: string | undefined) => (v && Number(v) > 0 ? Number(v) * 1000 : undefined);
const op = startOperator({
  metrics: telemetry.metrics,
  kubeConfig: kc,
  namespace,
  snapshotNamespace: env.TOLLGATE_SNAPSHOT_NAMESPACE || undefined,
  leaseName: values['lease-name'],
  log,
  resyncMs: seconds(env.TOLLGATE_RESYNC_SECONDS),
  upstreamsConditionEveryMs: seconds(env.TOLLGATE_UPSTREAMS_CONDITION_SECONDS),
  leaderElection: env.TOLLGATE_LEADER_ELECTION !== 'false',
  election: { leaseDurationMs: seconds(env.TOLLGATE_LEASE_DURATION_SECONDS), renewDeadlineMs: seconds(env.TOLLGATE_RENEW_DEADLINE_SECONDS), retryPeriodMs: seconds(env.TOLLGATE_RETRY_PERIOD_SECONDS) },
});
log.info({ namespace, snapshotNamespace: env.TOLLGATE_SNAPSHOT_NAMESPACE || namespace, identity: op.identity }, 'tollgate operator started');
const stop = (signal: string) => {
  log.info({ signal }, 'stopping: releasing the leader Lease');
  setTimeout(() => process.exit(1), 10_000).unref();
  op.stop().then(() => telemetry.close()).then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGTERM', () => stop('SIGTERM'));
process.once('SIGINT', () => stop('SIGINT'));
