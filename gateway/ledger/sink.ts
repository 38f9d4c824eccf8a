// The relay's one way into the ledger: append a row, and learn in the gateway's error vocabulary whether it is
// durable. Billing lives here and in the relay; telemetry is told about the row only after it is recorded.
import { GatewayError } from '../errors.ts';
import type { Ledger } from './ledger.ts';
import type { LedgerRow } from './row.ts';

export interface LedgerSink {
  /**
   * Resolves once the row is in the journal (the answer's last bytes may leave then, not before); rejects with a
   * `ledger_unavailable` GatewayError when it is not recorded (journal full, closed, disk failing).
   */
  append(row: LedgerRow): Promise<void>;
}

export function ledgerSink(ledger: Pick<Ledger, 'record'>): LedgerSink {
  // Rows of one event-loop turn share one journal write and so one promise: map its failure once, not per row.
  let raw: Promise<void> | undefined;
  let mapped: Promise<void> | undefined;
  return {
    append(row) {
      let p: Promise<void>;
      try {
        p = ledger.record(row);
      } catch (err) {
        return rejectUnrecorded(err);
      }
      if (p !== raw) {
        raw = p;
        mapped = p.catch(rejectUnrecorded);
      }
      return mapped!;
    },
  };
}

function rejectUnrecorded(err: unknown): Promise<never> {
  return Promise.reject(unrecorded(err));
}

/** Why a row was not recorded, as the error the caller sees (503 in its protocol's shape). */
export function unrecorded(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError('ledger_unavailable', `Usage could not be recorded (${(err as Error)?.message ?? String(err)}); the answer is withheld.`);
}
