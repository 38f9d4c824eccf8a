// The seam between the relay and a converter pair: what the relay asks of a converting route's answer side.
import type { SseEvent } from '../meter/stream-meter.ts';

/** The seam converting routes plug into; pass-through routes leave it out and bytes flow untouched. */
export interface ResponseConverter {
  /** Upstream JSON body to the client's JSON body. */
  json(body: unknown): unknown;
  /** A fresh incremental converter for one stream: upstream SSE events in, client SSE text out. */
  stream(): StreamConverter;
  /** An upstream error (status, raw body) in the client's error shape. */
  error(status: number, body: Buffer): { status: number; body: string; contentType?: string };
}

export interface StreamConverter {
  push(ev: SseEvent): string;
  /** Called once when the upstream ended (cleanly or not); returns what still has to be written. */
  end(): string;
}

/** What a converter pair's index builds for one request: the upstream body and the answer side. */
export interface Conversion {
  /** The upstream request body for one upstream model id (failover may pick another); the answer side follows it. */
  body(upstreamModel: string): string;
  converter: ResponseConverter;
}
