// Answers fastify and Node would otherwise make in their own shape (431, 408, 400 on a broken request, 404, 405,
// 503 while draining), rendered by the gateway's error renderer in the family of the path they were aimed at.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorFamily } from '../errors.ts';
import { GatewayError, renderError } from '../errors.ts';
import { routeUrl } from './route-url.ts';
import type { Deadline } from './deadlines.ts';
import { Deadlines } from './deadlines.ts';

export type FamilyOf = (url: string) => ErrorFamily;

/**
 * Node's `clientError` (headers too large, a request timed out before fastify saw it, unparsable HTTP): written on the
 * socket as one response, then the socket closes. The path, when the parser got that far, picks the family.
 */
export function clientErrorHandler(familyOf: FamilyOf) {
  return (e: Error, socket: Socket): void => {
    const err = e as Error & { code?: string; rawPacket?: Buffer };
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    let gerr: GatewayError;
    if (err.code === 'HPE_HEADER_OVERFLOW') gerr = new GatewayError('headers_too_large', 'The request headers are too large.');
    else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') gerr = new GatewayError('request_timeout', 'The request did not arrive in time.');
    else gerr = new GatewayError('invalid_request', 'The request is not valid HTTP.');
    const r = renderError(familyOf(requestPath(err.rawPacket, socket)), gerr);
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${r.status} ${STATUS_TEXT[r.status] ?? 'Error'}\r\nContent-Type: ${r.contentType}\r\nContent-Length: ${Buffer.byteLength(r.body)}\r\nConnection: close\r\n\r\n${r.body}`,
      );
    }
    socket.destroySoon();
  };
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/** The path from the request line in the raw bytes, or from the request Node already parsed on this socket. */
function requestPath(raw: Buffer | undefined, socket: Socket): string {
  if (raw && raw.length > 0) {
    const line = raw.toString('latin1', 0, Math.min(raw.length, 8192)).split('\r\n', 1)[0];
    const path = line.split(' ')[1];
    if (path) return path;
  }
  const res = (socket as Socket & { _httpMessage?: ServerResponse & { req?: IncomingMessage } })._httpMessage;
  return res?.req?.url ?? '/';
}

export interface BodyTimeouts {
  /** JSON bodies (every route but uploads). */
  jsonMs: number;
  /** Streamed multipart uploads (image edits), which may be large. */
  uploadMs: number;
}

/**
 * A body that trickles in (headers, then a byte every few seconds) would hold a connection for ever: each request
 * with a body gets a deadline, and a body still arriving then is answered 408 in the route's family, the connection
 * closed. The deadline goes when the body ended (fastify read it, or an upload was streamed through). Deadlines are
 * shared lists, one per duration (./deadlines.ts), not a Node timer each: one fires at most 1/20 of its duration
 * (and at most 0.5 s) late. Per request this is one list entry and two listeners shared by every request (they find
 * the entry on the request): no closure each.
 */
export function bodyTimeouts(app: FastifyInstance, familyOf: FamilyOf, t: BodyTimeouts): void {
  const expired = (reply: FastifyReply, ms: number) => bodyTimedOut(reply.request, reply, familyOf, ms);
  const json = new Deadlines<FastifyReply>(t.jsonMs, expired);
  const upload = new Deadlines<FastifyReply>(t.uploadMs, expired);
  app.addHook('onRequest', (req, reply, done) => {
    const raw = req.raw as BodyTimed;
    const h = raw.headers;
    if (raw.complete || (h['transfer-encoding'] === undefined && (h['content-length'] === undefined || h['content-length'] === '0'))) return done();
    raw[BODY_DEADLINE] = ((routeUrl(req) ?? '').endsWith('/images/edits') ? upload : json).add(reply);
    // Left attached (the request is done with either): a second call finds no deadline.
    raw.on('end', clearBodyDeadline);
    raw.on('close', clearBodyDeadline);
    done();
  });
}

const BODY_DEADLINE = Symbol('tollgate.bodyDeadline');
type BodyTimed = IncomingMessage & { [BODY_DEADLINE]?: Deadline<FastifyReply> };

/** The request's 'end' or 'close' listener (`this` is the request). */
function clearBodyDeadline(this: BodyTimed): void {
  const d = this[BODY_DEADLINE];
  if (d === undefined) return;
  d.cancel();
  this[BODY_DEADLINE] = undefined;
}

function bodyTimedOut(req: FastifyRequest, reply: FastifyReply, familyOf: FamilyOf, ms: number): void {
  if (req.raw.complete) return;
  const res = reply.raw;
  req.log.info({ timeoutMs: ms }, 'request body too slow: 408');
  if (res.headersSent || reply.sent) {
    req.raw.destroy();
    return;
  }
  // Whatever waits on the body (fastify's parser, an upload being streamed upstream) fails once the socket goes;
  // the hijack keeps fastify from answering a second time.
  reply.hijack();
  const r = renderError(familyOf(req.url), new GatewayError('request_timeout', `The request body did not arrive within ${ms / 1000} s.`), req.id);
  res.writeHead(r.status, { 'content-type': r.contentType, 'content-length': Buffer.byteLength(r.body), connection: 'close', 'x-tollgate-request-id': req.id });
  res.end(r.body, () => req.socket.destroy());
}

/** Route paths as fastify patterns (`:param`, `*`) per method, to tell a wrong method (405) from an unknown path (404). */
export class RouteTable {
  private readonly routes: { pattern: RegExp; methods: Set<string> }[] = [];
  private readonly byPath = new Map<string, Set<string>>();

  watch(app: FastifyInstance): void {
    app.addHook('onRoute', (r) => {
      const methods = Array.isArray(r.method) ? r.method : [r.method];
      let set = this.byPath.get(r.url);
      if (!set) {
        set = new Set();
        this.byPath.set(r.url, set);
        this.routes.push({ pattern: patternOf(r.url), methods: set });
      }
      for (const m of methods) set.add(m);
    });
  }

  /** The methods served at this path (empty: no such path). */
  allowed(path: string): string[] {
    const out = new Set<string>();
    for (const r of this.routes) if (r.pattern.test(path)) for (const m of r.methods) out.add(m);
    return [...out];
  }
}

function patternOf(url: string): RegExp {
  const escaped = url.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${escaped.replace(/:[A-Za-z0-9_]+/g, '[^/]+').replace(/\*/g, '.*')}$`);
}

/**
 * An unknown path that is one of ours without its `/api` prefix names the right path; a known path with another
 * method is 405 with `Allow`; a path that reads like a messages call answers in the messages shape.
 */
export function notFoundHandler(routes: RouteTable, familyOf: FamilyOf) {
  return (req: FastifyRequest, reply: FastifyReply): void => {
    const path = req.url.split('?')[0];
    const family = path.includes('/messages') && familyOf(path) === 'chat' ? 'messages' : familyOf(path);
    const methods = routes.allowed(path);
    let err: GatewayError;
    if (methods.length > 0) {
      const allow = [...new Set(methods.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])))].join(', ');
      reply.header('allow', allow);
      err = new GatewayError('method_not_allowed', `${req.method} is not allowed on ${path}; use ${allow}.`);
    } else if (!path.startsWith('/api/') && routes.allowed(`/api${path}`).length > 0) {
      err = new GatewayError('not_found', `No route for ${req.method} ${path}. The API is served under /api: use ${req.method} /api${path} (SDK base URL ${baseHint(path)}).`);
    } else {
      err = new GatewayError('not_found', `No route for ${req.method} ${path}.`);
    }
    const r = renderError(family, err, req.id);
    void reply.code(r.status).header('content-type', r.contentType).header('x-tollgate-request-id', req.id).send(r.body);
  };
}

function baseHint(path: string): string {
  if (path.startsWith('/v1/messages')) return '{gateway}/api';
  const m = /^\/(v\d+)\//.exec(path);
  return m ? `{gateway}/api/${m[1]}` : '{gateway}/api';
}
