// The process-wide target health: one per process, as the upstream connections it describes are.
import { HealthRegistry } from './health.ts';

export const defaultRegistry = new HealthRegistry();
