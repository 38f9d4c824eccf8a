// A monotonic counter summed here and handed to the SDK only when metrics are collected. The SDK's synchronous
// counter hashes the attribute object (sort keys, JSON.stringify) on every add; here each attribute set is built once
// per distinct key and a request costs one Map lookup.
import type { Attributes, Meter, MetricOptions } from '@opentelemetry/api';

export class SummedCounter {
  private readonly sums = new Map<string, { attrs: Attributes; value: number }>();

  constructor(meter: Meter, name: string, options: MetricOptions) {
    meter.createObservableCounter(name, options).addCallback((r) => {
      for (const s of this.sums.values()) r.observe(s.value, s.attrs);
    });
  }

  /** `key` must identify `attrs()` exactly: the attributes are built only the first time a key is seen. */
  add(value: number, key: string, attrs: () => Attributes): void {
    const s = this.sums.get(key);
    if (s) s.value += value;
    else this.sums.set(key, { attrs: attrs(), value });
  }
}
