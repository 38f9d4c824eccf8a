import { localRef, routingFields, status } from '../common.ts';
import { AGE_COLUMN, APPLIED_COLUMN, READY_COLUMN, REASON_COLUMN, type KindDefinition } from '../crd.ts';
import { PROTOCOLS, UPSTREAM_WEIGHT } from '../../../gateway/snapshot/schema.ts';
import { bool, int, list, obj, str } from '../openapi.ts';

const upstream = obj('One upstream that serves this model in one protocol.', {
  protocol: str('The protocol this upstream serves natively: openai, anthropic, responses, images or gemini. Its Provider must list it.', { enum: [...PROTOCOLS] }),
  providerRef: localRef('Provider', 'The Provider that receives the call.'),
  model: str('The model id sent to the upstream, e.g. gpt-4o-2024-08-06.', { minLength: 1, maxLength: 256 }),
  weight: int(`Relative share of traffic among the upstreams of one protocol, ${UPSTREAM_WEIGHT.min} to ${UPSTREAM_WEIGHT.max}; default 1.`, {
    'x-kubernetes-validations': [{ rule: `self >= ${UPSTREAM_WEIGHT.min} && self <= ${UPSTREAM_WEIGHT.max}`, message: `weight must be between ${UPSTREAM_WEIGHT.min} and ${UPSTREAM_WEIGHT.max}` }],
  }),
}, ['protocol', 'providerRef', 'model']);

export const model: KindDefinition = {
  kind: 'Model',
  plural: 'models',
  singular: 'model',
  shortNames: ['tgmodel'],
  description: 'Model is a name clients send as `model`: the upstreams that serve it per protocol, its pricing group, and the request fields it accepts.',
  spec: obj('Desired state of the Model.', {
    id: str('The name clients send as `model`, e.g. openai/gpt-4o. Separate from metadata.name because object names cannot hold "/". Unique in the namespace (case-insensitively, together with aliases).', {
      minLength: 1,
      maxLength: 200,
      pattern: '^[A-Za-z0-9][A-Za-z0-9._:/@-]*$',
    }),
    alias: str('A second accepted name, e.g. gpt-4o, matched case-insensitively. Written in lower case.', {
      minLength: 1,
      maxLength: 200,
      pattern: '^[A-Za-z0-9][A-Za-z0-9._:/@-]*$',
      'x-kubernetes-validations': [{ rule: 'self == self.lowerAscii()', message: 'alias must be lower-case' }],
    }),
    public: bool('Listed by /models to every key; an Organization still needs permission to call it. Default false.'),
    pricingGroupRef: localRef('PricingGroup', 'The PricingGroup that prices this model.'),
    created: int('Unix seconds shown as `created` in /models.', { minimum: 0 }),
    upstreams: list('The upstreams that serve this model, each in one protocol. A protocol with several upstreams spreads traffic by weight and fails over on transport errors.', upstream, {
      minItems: 1,
      maxItems: 32,
      'x-kubernetes-list-type': 'atomic',
      'x-kubernetes-validations': [{
        rule: 'self.all(a, self.exists_one(b, b.protocol == a.protocol && b.providerRef.name == a.providerRef.name && b.model == a.model))',
        message: 'duplicate upstream: protocol, providerRef and model must be unique',
      }],
    }),
    capabilities: obj('Which request fields pass upstream.', {
      drop: list('Top-level request fields removed before the body goes upstream, e.g. logit_bias.', str('A top-level request field name.', { minLength: 1, maxLength: 128 }), {
        maxItems: 64,
        'x-kubernetes-list-type': 'set',
      }),
      imageSizes: list('Sizes accepted on the v3 (compat) images route, e.g. 1024x1024, 2K, auto. Only used by images upstreams.', str('An image size: WIDTHxHEIGHT, a tier such as 2K, or auto.', {
        maxLength: 16,
        pattern: '^(auto|adaptive|[1-9]K|[0-9]{2,5}x[0-9]{2,5})$',
      }), { maxItems: 32, 'x-kubernetes-list-type': 'set' }),
    }),
    routing: obj('Retries, ejection and fallbacks for this model, over its providers\' spec.routing.', {
      ...routingFields,
      fallbacks: list('Model ids (spec.id) tried in order when this model\'s upstreams are exhausted or ejected, possibly over another protocol. The client\'s model stays the reported one; the usage row names the model that answered.', str('A model id.', { minLength: 1, maxLength: 200 }), { maxItems: 5 }),
    }),
  }, ['id', 'pricingGroupRef', 'upstreams']),
  status: status({
    protocols: str('The protocols this model serves, comma-separated (e.g. openai,responses), as the PROTOCOLS column shows. Written by the operator.', { maxLength: 64 }),
  }),
  columns: [
    { name: 'ID', type: 'string', jsonPath: '.spec.id', description: 'The name clients send as model.' },
    // A printer column shows only the first match of a JSONPath, so the operator writes the joined list to status.
    { name: 'Protocols', type: 'string', jsonPath: '.status.protocols', description: 'Protocols served.' },
    { name: 'Pricing', type: 'string', jsonPath: '.spec.pricingGroupRef.name', description: 'PricingGroup.' },
    READY_COLUMN,
    { name: 'Alias', type: 'string', jsonPath: '.spec.alias', description: 'Second accepted name.', priority: 1 },
    { name: 'Public', type: 'boolean', jsonPath: '.spec.public', description: 'Listed to every key.', priority: 1 },
    REASON_COLUMN,
    APPLIED_COLUMN,
    AGE_COLUMN,
  ],
};
