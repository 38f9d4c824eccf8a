// Maps the client's `model` string to a configured model and checks the organization may call it (docs/contract.md, errors).
import { GatewayError } from '../errors.ts';
import type { RuntimeKey, RuntimeModel, RuntimeSnapshot, UpstreamTarget } from '../snapshot/runtime.ts';
import { orgAllows } from '../snapshot/runtime.ts';
import type { Protocol } from '../snapshot/schema.ts';

export function resolveModel(snapshot: RuntimeSnapshot, key: RuntimeKey, name: string): RuntimeModel {
  const model = snapshot.byName.get(name.toLowerCase());
  if (!model) throw notFound(name);
  if (!orgAllows(key.organization, model.id)) {
    // A private model the org may not use stays invisible; a public one is visible but forbidden.
    if (!model.public) throw notFound(name);
    throw new GatewayError('model_not_permitted', `Your organization is not permitted to use the model \`${name}\`.`, { param: 'model' });
  }
  return model;
}

function notFound(name: string): GatewayError {
  return new GatewayError('model_not_found', `The model \`${name}\` does not exist or you do not have access to it.`, { param: 'model' });
}

export function upstreamsFor(model: RuntimeModel, protocol: Protocol, clientModel: string): UpstreamTarget[] {
  const ups = model.protocols[protocol];
  if (!ups) throw new GatewayError('unsupported_protocol', `The model \`${clientModel}\` does not support this endpoint (it needs the ${protocol} protocol).`, { param: 'model' });
  return ups;
}

/** Weighted order: the first is picked by weight, the rest follow as failover candidates. */
export function orderByWeight(ups: UpstreamTarget[]): UpstreamTarget[] {
  if (ups.length === 1) return ups;
  let total = 0;
  for (const u of ups) total += u.weight;
  let r = Math.random() * total;
  let first = 0;
  for (let i = 0; i < ups.length; i++) {
    r -= ups[i].weight;
    if (r < 0) {
      first = i;
      break;
    }
  }
  return [ups[first], ...ups.slice(0, first), ...ups.slice(first + 1)];
}
