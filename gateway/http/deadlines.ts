// Coarse shared deadlines for waits every request has (the body timeout, the total upstream timeout). A Node timer per
// request costs a Timeout object, its async-context bookkeeping and a libuv clock read to arm, and an unlink to
// clear, for a deadline that almost never fires. Here all deadlines of one duration share one list and one timer:
// arming is a clock read and a link, clearing an unlink, and the timer fires about once per duration under load.
//
// Granularity: a deadline fires between `ms` and `ms + slackMs(ms)` after it was armed (plus event-loop lag, as for
// any timer): 1/20 of the duration, at most 500 ms (30 s body timeout: by 30.5 s; 600 s total: by 600.5 s).

/** One armed deadline; `cancel()` is idempotent. */
export class Deadline<A = unknown> {
  at = 0;
  prev: Deadline<A> | undefined = undefined;
  next: Deadline<A> | undefined = undefined;
  /** Undefined once fired or cancelled. */
  list: Deadlines<A> | undefined;
  readonly arg: A;

  constructor(list: Deadlines<A>, arg: A) {
    this.list = list;
    this.arg = arg;
  }

  cancel(): void {
    this.list?.unlink(this);
  }
}

/**
 * Every deadline of one duration, in arming order, which is also deadline order (one monotonic clock, one
 * duration): the head is always the next to expire. `fire(arg, ms)` is called for each expired one.
 */
export class Deadlines<A = unknown> {
  readonly ms: number;
  private readonly slack: number;
  private readonly fire: (arg: A, ms: number) => void;
  private head: Deadline<A> | undefined;
  private tail: Deadline<A> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(ms: number, fire: (arg: A, ms: number) => void) {
    this.ms = ms;
    this.slack = slackMs(ms);
    this.fire = fire;
  }

  /** Arms a deadline `ms` from now that calls `fire(arg, ms)` unless cancelled first. */
  add(arg: A): Deadline<A> {
    const d = new Deadline(this, arg);
    d.at = performance.now() + this.ms;
    const tail = this.tail;
    if (tail === undefined) this.head = d;
    else {
      tail.next = d;
      d.prev = tail;
    }
    this.tail = d;
    // An armed timer is never later than this deadline: it was armed for an older head, which expires first.
    if (this.timer === undefined) this.arm(this.ms);
    return d;
  }

  /** Removes `d` (armed in this list); the timer stays: it re-arms or stops when it fires. */
  unlink(d: Deadline<A>): void {
    const { prev, next } = d;
    if (prev === undefined) this.head = next;
    else prev.next = next;
    if (next === undefined) this.tail = prev;
    else next.prev = prev;
    d.prev = d.next = d.list = undefined;
  }

  /** Deadlines armed and not yet fired or cancelled (tests). */
  get size(): number {
    let n = 0;
    for (let d = this.head; d !== undefined; d = d.next) n++;
    return n;
  }

  private arm(delay: number): void {
    // unref: a pending request keeps the process alive through its sockets, not through its deadline.
    this.timer = setTimeout(sweep, delay + this.slack, this).unref();
  }

  /** Fires what expired (a callback may cancel or arm others), then re-arms for the new head, if any. */
  sweep(): void {
    this.timer = undefined;
    const now = performance.now();
    let d = this.head;
    while (d !== undefined && d.at <= now) {
      this.unlink(d);
      try {
        this.fire(d.arg, this.ms);
      } catch (err) {
        // One failing callback must not strand the deadlines after it.
        queueMicrotask(() => {
          throw err;
        });
      }
      d = this.head;
    }
    if (d !== undefined && this.timer === undefined) this.arm(Math.max(0, d.at - now));
  }
}

function sweep(list: { sweep(): void }): void {
  list.sweep();
}

/** How late past its duration a deadline may fire: 1/20 of it, at least 1 ms, at most 500 ms. */
export function slackMs(ms: number): number {
  return Math.min(500, Math.max(1, Math.floor(ms / 20)));
}

/** One list per duration, made on first use (durations come from configuration: a handful of values). */
export class DeadlinesByDuration<A> {
  private readonly lists = new Map<number, Deadlines<A>>();
  private readonly fire: (arg: A, ms: number) => void;

  constructor(fire: (arg: A, ms: number) => void) {
    this.fire = fire;
  }

  add(ms: number, arg: A): Deadline<A> {
    let list = this.lists.get(ms);
    if (list === undefined) this.lists.set(ms, (list = new Deadlines(ms, this.fire)));
    return list.add(arg);
  }
}
