// Preload for Portkey's start-server (`node --import ./bench/loopback-only.ts …`), which takes only --port:
// - a listen on a port without a host binds 127.0.0.1, so the peer never listens beyond loopback;
// - with PORTKEY_KEEP_NODE_GLOBALS=1, Node's own Request/Response stay global. @hono/node-server 1.19
//   replaces them with light classes whose Response keeps the init's Headers object; Portkey builds its
//   stream response from the upstream fetch Response, whose headers are immutable, and then appends
//   x-portkey-* headers to it: every stream fails with "TypeError: immutable" (JSON is unaffected).
import { Server } from 'node:net';

const listen = Server.prototype.listen;
Server.prototype.listen = function (this: Server, ...args: unknown[]) {
  if (typeof args[0] === 'number' && (args[1] === undefined || typeof args[1] === 'function')) args.splice(1, args[1] === undefined ? 1 : 0, '127.0.0.1');
  else if (typeof args[0] === 'object' && args[0] !== null && !('path' in args[0]) && !(args[0] as { host?: string }).host) {
    args[0] = { ...(args[0] as object), host: '127.0.0.1' };
  }
  return (listen as (...a: unknown[]) => Server).apply(this, args);
} as typeof Server.prototype.listen;

if (process.env.PORTKEY_KEEP_NODE_GLOBALS === '1') {
  const define = Object.defineProperty;
  Object.defineProperty = function <T>(o: T, key: PropertyKey, desc: PropertyDescriptor & ThisType<unknown>): T {
    if (o === globalThis && (key === 'Request' || key === 'Response')) return o;
    return define(o, key, desc);
  };
}
