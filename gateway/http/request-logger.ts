// Fastify's per-request logger (req.log, reply.log), made only when a request logs something. Fastify builds a pino
// child with the request id for every request (~1 µs and a handful of objects each, bench/cpu-per-request.ts), but
// at the default level a successful request never logs through it: the access line is written by telemetry.
// It goes in as the server logger's `child` (not as fastify's childLoggerFactory option, which has fastify check every
// child it returns for its methods: a cost per request as large as the one saved).
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

class RequestLogger {
  declare fatal: FastifyBaseLogger['fatal'];
  declare error: FastifyBaseLogger['error'];
  declare warn: FastifyBaseLogger['warn'];
  declare info: FastifyBaseLogger['info'];
  declare debug: FastifyBaseLogger['debug'];
  declare trace: FastifyBaseLogger['trace'];
  declare silent: FastifyBaseLogger['silent'];
  private readonly parent: FastifyBaseLogger;
  private readonly bindings: Bindings;
  private made: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings) {
    this.parent = parent;
    this.bindings = bindings;
  }

  /** The pino child fastify would have made, made now. */
  real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings));
  }

  get level(): string {
    return this.made?.level ?? this.parent.level;
  }

  set level(v: string) {
    this.real().level = v;
  }

  child(bindings: Bindings, opts?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, opts);
  }
}

for (const m of LEVELS) {
  Object.defineProperty(RequestLogger.prototype, m, {
    value(this: RequestLogger, ...args: unknown[]): void {
      const log = this.real();
      (log[m] as (...a: unknown[]) => void).apply(log, args);
    },
  });
}

/**
 * The same child as `logger.child`, made at its first use. One with its own level or serializers is made at once,
 * and hands out lazy children in turn: fastify's own logger is such a child of the one it is given (with its
 * serializers), and every request's logger is a child of that one.
 */
export function requestLogger(logger: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions = {}): FastifyBaseLogger {
  if (opts.level !== undefined || opts.serializers !== undefined) return withLazyChildren(logger.child(bindings, opts));
  return new RequestLogger(logger, bindings) as unknown as FastifyBaseLogger;
}

/**
 * The server's logger for fastify: `logger` itself (every other property and method is its own, through the
 * prototype) but with children made lazily (`requestLogger`).
 */
export function withLazyChildren(logger: FastifyBaseLogger): FastifyBaseLogger {
  return Object.create(logger, {
    child: { value: (bindings: Bindings, opts?: ChildLoggerOptions) => requestLogger(logger, bindings, opts) },
  }) as FastifyBaseLogger;
}
