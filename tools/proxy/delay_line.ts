/**
 * One direction of a proxied connection: bytes enter with their arrival time and leave when
 * due, like a long wire. Nothing waits for an acknowledgement, so a stream is not throttled to
 * bytes-per-round-trip: a 4 MB write at 50 ms one way arrives ~50 ms later, all of it.
 *
 *   push(chunk, now)
 *     │  cut into pieces of ≤ BURST bytes when a bandwidth cap is set
 *     ▼
 *   token bucket (rate = cap, depth = BURST)   depart = when the tokens for the piece are there
 *     │
 *     ▼
 *   due = max(due of the piece ahead, depart + max(0, delay ± jitter))   ← order is kept
 *     │
 *     ▼
 *   queue, due times non-decreasing; one timer, set for the head's due time
 *   ┌─────────┬─────────┬─────────┬─────┐
 *   │ 16 KiB  │ 16 KiB  │ 3 KiB   │ FIN │ ──► sink.write(…) / sink.end()
 *   │ 50.0 ms │ 66.4 ms │ 82.8 ms │82.8 │
 *   └─────────┴─────────┴─────────┴─────┘
 *
 * A fault (proxy.ts `fault()`) may `hold` the line: the timer's releases stop, pieces keep
 * queueing (so backpressure still bounds memory), and `unhold` lets them out in order.
 *
 * Bounded memory: when the bytes held here plus the sink's own write buffer pass `maxQueued`,
 * `onPause` stops the reading side; `onResume` restarts it once they fall to half. Like a TCP
 * window, this caps one connection at about maxQueued / delay bytes per second.
 */
import { runtime } from "../../runtime-adapters/index.ts";

/** Token-bucket depth and the largest piece a capped stream is cut into. */
export const BURST = 16 * 1024;

/** Where released bytes go: a node:net Socket fits. */
export interface Sink {
  write(data: Uint8Array): boolean;
  end(): void;
  readonly writableLength: number;
  readonly destroyed: boolean;
  cork?(): void;
  uncork?(): void;
}

export interface DelayLineOptions {
  delayMs: number;
  jitterMs?: number;
  /** A cap, or a cap that changes with the runtime clock (undefined: no cap then). */
  bandwidthBytesPerSec?: number | ((now: number) => number | undefined);
  /** Uniform in [0, 1): the jitter draws. */
  random: () => number;
  /** No byte departs before this time (a connection's handshake). */
  notBefore?: number;
  /** Bytes held (here + in the sink's buffer) before the source is paused. */
  maxQueued: number;
  onPause(): void;
  onResume(): void;
  /** Called with the size of each piece handed to the sink. */
  onForward(bytes: number): void;
}

interface Piece {
  data: Uint8Array | null; // null: the FIN
  due: number;
}

export class DelayLine {
  #o: DelayLineOptions;
  #queue: (Piece | undefined)[] = [];
  #head = 0;
  #queued = 0;
  #lastDue = -Infinity;
  #lastDepart: number;
  #tokens = BURST;
  #tokensAt: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #sink: Sink | undefined;
  #paused = false;
  #stopped = false;
  #ended = false;
  #endQueued = false;
  /** Faults holding this line (stall, partition): nothing leaves while > 0. */
  #holds = 0;

  constructor(o: DelayLineOptions) {
    this.#o = o;
    this.#lastDepart = o.notBefore ?? -Infinity;
    this.#tokensAt = runtime.now();
  }

  /** Bytes waiting in the line (not yet handed to the sink). */
  get queuedBytes(): number {
    return this.#queued;
  }

  /** True once the FIN has been handed to the sink. */
  get ended(): boolean {
    return this.#ended;
  }

  /** True while a fault holds the line. */
  get held(): boolean {
    return this.#holds > 0;
  }

  /** True when nothing waits in the line. */
  get empty(): boolean {
    return this.#head >= this.#queue.length;
  }

  push(chunk: Uint8Array, now = runtime.now()): void {
    if (this.#stopped) return;
    if (this.#o.bandwidthBytesPerSec === undefined) this.#enqueue(chunk, this.#depart(0, now));
    else {
      // Pieces no bigger than the bucket, so a large chunk trickles out at the cap.
      for (let off = 0; off < chunk.length; off += BURST) {
        const piece = chunk.subarray(off, Math.min(chunk.length, off + BURST));
        this.#enqueue(piece, this.#depart(piece.length, now));
      }
    }
    this.#queued += chunk.length;
    if (!this.#paused && this.#pending() > this.#o.maxQueued) {
      this.#paused = true;
      this.#o.onPause();
    }
    this.#kick();
  }

  /** The source sent its FIN: forward it after everything queued (once, however often called). */
  pushEnd(now = runtime.now()): void {
    if (this.#stopped || this.#endQueued) return;
    this.#endQueued = true;
    const depart = Math.max(now, this.#lastDepart);
    this.#queue.push({ data: null, due: Math.max(this.#lastDue, depart + this.#o.delayMs) });
    this.#kick();
  }

  /** Starts releasing into `sink` (for the upstream side: once it has connected). */
  attach(sink: Sink): void {
    this.#sink = sink;
    this.#kick();
  }

  /**
   * Withholds everything from now on, as a cable pulled out would: bytes keep arriving and
   * queue (the source is paused at `maxQueued`, as a full window stops a sender), nothing is
   * dropped. Each hold needs its own `unhold`; the line flows again when none is left.
   */
  hold(): void {
    this.#holds++;
  }

  /** Ends one hold: with none left, what queued meanwhile leaves at once, in order. */
  unhold(): void {
    if (this.#holds === 0) return;
    if (--this.#holds === 0) this.#kick();
  }

  /** The sink's buffer drained ('drain'): maybe resume the source. */
  drained(): void {
    this.#relieve();
  }

  /** Drops whatever is queued and releases nothing more (the sink or the connection is gone). */
  stop(): void {
    // A paused source must flow again, or its FIN (or the data that earns it a reset) is never read.
    if (this.#paused && !this.#stopped) {
      this.#paused = false;
      this.#o.onResume();
    }
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queue = [];
    this.#head = 0;
    this.#queued = 0;
  }

  /** When the last byte of a piece of `n` bytes leaves the token bucket (ms, runtime clock). */
  #depart(n: number, now: number): number {
    let t = Math.max(now, this.#lastDepart);
    const bw = this.#o.bandwidthBytesPerSec;
    const cap = typeof bw === "function" ? bw(t) : bw;
    if (cap === undefined) this.#tokens = BURST, this.#tokensAt = t; // uncapped for now: a full bucket
    else {
      const perMs = cap / 1000;
      this.#tokens = Math.min(BURST, this.#tokens + (t - this.#tokensAt) * perMs);
      this.#tokensAt = t;
      if (this.#tokens < n) {
        t += (n - this.#tokens) / perMs;
        this.#tokens = n;
        this.#tokensAt = t;
      }
      this.#tokens -= n;
    }
    this.#lastDepart = t;
    return t;
  }

  #enqueue(data: Uint8Array, depart: number): void {
    const j = this.#o.jitterMs ? (2 * this.#o.random() - 1) * this.#o.jitterMs : 0;
    // Never before the piece ahead: a late draw holds back the pieces behind it, as on a wire.
    const due = Math.max(this.#lastDue, depart + Math.max(0, this.#o.delayMs + j));
    this.#lastDue = due;
    this.#queue.push({ data, due });
  }

  /** Releases what is due now, or sets the timer for the head. */
  #kick(): void {
    if (this.#timer !== undefined || !this.#sink || this.empty || this.#holds > 0) return;
    const wait = this.#queue[this.#head]!.due - runtime.now();
    if (wait <= 0) this.#release();
    // ceil: a timer never fires before its time, so nothing leaves early (RTT ≥ 2 × delay).
    else this.#timer = setTimeout(() => this.#release(), Math.ceil(wait));
  }

  #release(): void {
    this.#timer = undefined;
    const sink = this.#sink;
    if (this.#stopped || !sink || this.#holds > 0) return;
    if (sink.destroyed) return this.stop();
    const now = runtime.now();
    const q = this.#queue;
    sink.cork?.(); // pieces due together leave in one writev
    while (this.#head < q.length && q[this.#head]!.due <= now) {
      const p = q[this.#head]!;
      q[this.#head++] = undefined;
      if (p.data) {
        this.#queued -= p.data.length;
        sink.write(p.data);
        this.#o.onForward(p.data.length);
      } else {
        this.#ended = true;
        sink.end();
      }
    }
    sink.uncork?.();
    if (this.#head > 1024 && this.#head * 2 > q.length) {
      this.#queue = q.slice(this.#head);
      this.#head = 0;
    }
    this.#relieve();
    this.#kick();
  }

  #pending(): number {
    return this.#queued + (this.#sink?.writableLength ?? 0);
  }

  #relieve(): void {
    if (this.#paused && !this.#stopped && this.#pending() <= this.#o.maxQueued / 2) {
      this.#paused = false;
      this.#o.onResume();
    }
  }
}
