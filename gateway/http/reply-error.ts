// The one render-and-send of a GatewayError: the family's shape, its status and content type, and the request id.
import type { FastifyReply } from 'fastify';
import type { ErrorFamily, GatewayError } from '../errors.ts';
import { renderError } from '../errors.ts';

export function replyError(reply: FastifyReply, family: ErrorFamily, err: GatewayError, requestId?: string): void {
  const r = renderError(family, err, requestId);
  reply.code(r.status).header('content-type', r.contentType);
  if (requestId) reply.header('x-tollgate-request-id', requestId);
  void reply.send(r.body);
}
