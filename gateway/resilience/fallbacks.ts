// A model's fallbacks as a chain of relay calls, built only when the one before is exhausted: the first model's
// list is walked in order (a fallback's own fallbacks are not followed, so there is no cycle), skipping models the
// key's organization may not call and models the route cannot serve.
import { GatewayError } from '../errors.ts';
import type { RelayCall } from '../relay/relay.ts';
import type { RuntimeKey, RuntimeModel, RuntimeSnapshot } from '../snapshot/runtime.ts';
import { orgAllows } from '../snapshot/runtime.ts';

export function withFallbacks(snapshot: RuntimeSnapshot, key: RuntimeKey, model: RuntimeModel, call: RelayCall, make: (m: RuntimeModel) => RelayCall | undefined): RelayCall {
  const ids = model.policy.fallbacks;
  if (ids.length === 0) return call;
  const from = (i: number) => (): RelayCall | undefined => {
    for (let j = i; j < ids.length; j++) {
      const m = snapshot.byName.get(ids[j].toLowerCase());
      if (!m || !orgAllows(key.organization, m.id)) continue;
      let next: RelayCall | undefined;
      try {
        next = make(m);
      } catch (err) {
        // The request cannot be put in this fallback's protocol (a conversion the route refuses): not the client's
        // fault, since the first model took it as it is; the next fallback is tried, and after the last the first
        // model's own failure stands.
        if (err instanceof GatewayError) continue;
        throw err;
      }
      if (next) return { ...next, fallback: from(j + 1) };
    }
    return undefined;
  };
  call.fallback = from(0);
  return call;
}
