// Metric attribute sets built once per combination (route, model, provider, status) and reused: the request path
// then allocates no attribute object per metric point. Bounded: past MAX_SETS distinct sets (a misbehaving client
// cannot cause that; models and routes come from config) the cache starts over.
import type { Attributes } from '@opentelemetry/api';

const MAX_SETS = 10_000;

export class AttributeSets {
  private readonly sets = new Map<string, Attributes>();

  /** The set for `key`, made by `make` the first time. */
  get(key: string, make: () => Attributes): Attributes {
    let a = this.sets.get(key);
    if (a === undefined) {
      if (this.sets.size >= MAX_SETS) this.sets.clear();
      a = Object.freeze(make());
      this.sets.set(key, a);
    }
    return a;
  }
}
