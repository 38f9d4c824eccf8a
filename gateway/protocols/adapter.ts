// What the gateway knows of one wire protocol, in one place: routes, the relay and the upstream client ask it.
import type { ErrorFamily, GatewayError } from '../errors.ts';
import type { Protocol } from '../snapshot/schema.ts';

export interface ProtocolAdapter {
  readonly protocol: Protocol;
  /** Paths appended to a provider's base URL, one per operation the gateway calls. */
  readonly paths: Readonly<Record<string, string>>;
  /** The provider's credential as this protocol's API expects it. */
  credentialHeaders(credential: string): Record<string, string>;
  /** A failure after a stream began, framed so that this protocol's SDKs raise it as an API error. */
  streamError(family: ErrorFamily, err: GatewayError): string;
}

/** OpenAI and the OpenAI-style protocols (responses, images) all take the credential as a bearer token. */
export function bearer(credential: string): Record<string, string> {
  return { authorization: `Bearer ${credential}` };
}
