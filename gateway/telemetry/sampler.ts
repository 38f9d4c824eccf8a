// OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG, as the OpenTelemetry SDK environment specification names them.
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace';
import type { Sampler } from '@opentelemetry/sdk-trace';

export function samplerFromConfig(name: string, arg: string | undefined): Sampler {
  const ratio = () => {
    const r = Number(arg ?? '1');
    return Number.isFinite(r) && r >= 0 && r <= 1 ? r : 1;
  };
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio());
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}
