/**
 * One epoch's reading: requests the plan's samples as the window allows, counts each exactly
 * once in the ledger, runs the transform, and hands batches to the consumer from the
 * assembler (src/assemble/assembler.ts, NOTE [ Ready-order assembly ]).
 *
 *   plan ─► pump(): window room ─► source.fetch(id) ─► arrived ─► ledger ─► transform ─► assembler
 *                ▲                                                                        │
 *                └───────────────── next(): a batch taken frees window room ◄─────────────┘
 *
 * The run knows its host (the scheduler, epochs.ts) only through `RunHost`: how much room the
 * shared window leaves it, where figures go, and when the depth may grow.
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { Assembler } from "../assemble/assembler.ts";
import { PacketAssembler } from "../assemble/packets.ts";
import { CONN, OFFSETS, type Packet, type PacketRead, type PacketReader, POS } from "../read/packet.ts";
import type { Batch } from "../assemble/batch.ts";
import { CassetteError, type ErrorCode } from "../errors.ts";
import { mergePackets, type SerializedError } from "../read/packet.ts";
import type { Fetched, Source } from "../source/source.ts";
import { Ledger } from "./ledger.ts";
import type { Window } from "./window.ts";
import type { ConnCount } from "../observe/stats.ts";

/** An epoch run's plan: its ids in order and, where it was drawn so, the same as positions in the split. */
export interface RunPlan {
  ids: string[];
  /** The split the plan was drawn from, and the plan as positions in it (epochOrder): read workers that hold the split are sent only these. */
  split?: { ids: readonly string[]; order: Int32Array };
}

export interface RunOptions<S extends Fetched, T> {
  batchSize: number;
  strict: boolean;
  /** After the retries, a failed sample is counted and left out ("skip") or ends the epoch ("throw"). */
  skipErrors: boolean;
  transform?: (s: S) => T | Promise<T>;
  /**
   * With no transform, called for each sample of a batch the consumer released (Batch.release):
   * the read path takes back the buffers it made for it (NOTE [ Image buffers ], src/decode/pool.ts).
   */
  recycle?: (s: S) => void;
  signal?: AbortSignal;
}

/** What a run asks of the scheduler that owns it. */
export interface RunHost<S extends Fetched, T> {
  readonly options: RunOptions<S, T>;
  /** The source, opened on first use. */
  source(): Promise<Source<S>>;
  /** `run` has its source and requests next: a source that plans (Source.plan) hears its order first. */
  opened(run: EpochRun<S, T>, source: Source<S>): void;
  /** Samples `run` may still request now (one window bounds the active run and the read-ahead together). */
  room(run: EpochRun<S, T>): number;
  /** A batch was handed over. */
  handedOver(batch: Batch<T>, gapMs: number, waitMs: number, conns: Map<string, ConnCount>): void;
  /** A request was answered after `ms` with a sample that holds `bytes` (its bytes, and its pixels when decoded). */
  answered(ms: number, bytes: number, now: number): void;
  /** A packet's `n` answers, after `ms[i]` each, holding `bytes` in all. */
  answeredMany(ms: Float32Array, n: number, bytes: number, now: number): void;
  /** The source's packet reads, where its workers fill packets (NOTE [ Packets ], src/read/packet.ts). */
  packets(): PacketReader | undefined;
  /** The consumer found nothing ready with the window full. */
  starved(window: Window): void;
  /** The consumer waits on what is in flight (true: at the epoch's end, or mid-epoch, `stall`), or no longer (false): NOTE [ Epoch tail ]. */
  urge(on: boolean, stall?: boolean): void;
  duplicate(): void;
  /** A sample of `epoch` given up on (`onError: "skip"`), with why. */
  skipped(epoch: number, id: string, reason: string): void;
  /** Samples outstanding changed (the memory bound). */
  outstanding(): void;
  /** The run asked for its whole plan, or ended normally: start or feed the next epoch's read-ahead. */
  tail(source: Source<S>): void;
  /** The run ended (normally or not) at this window depth. */
  ended(depth?: number): void;
}

export class EpochRun<S extends Fetched, T> implements AsyncIterableIterator<Batch<T>, undefined> {
  readonly epoch: number;
  finished = false;
  stopped = false;
  readonly #host: RunHost<S, T>;
  readonly #o: RunOptions<S, T>;
  readonly #plan: string[];
  readonly #ledger: Ledger;
  readonly #assembler: Assembler<T, S>;
  /** Packet mode: read workers fill batch-sized packets and no transform runs here (NOTE [ Packets ]). */
  #reads?: PacketRead;
  #packets?: PacketAssembler<T>;
  #window?: Window; // set by begin(): a run read ahead has none until its epoch is asked for
  #source?: Source<S>;
  #begun = false;
  #next = 0; // plan position of the next request
  #outstanding = 0; // requested and not yet handed over (in flight, transforming, or ready)
  #pending = 0; // requested and neither arrived nor skipped
  #saturated = false;
  #error?: Error;
  #wake?: () => void;
  #lastHandOver = 0;
  #handed = 0; // batches handed over
  #urging?: "tail" | "stall"; // asked the read path to re-ask samples stuck far longer than usual (NOTE [ Epoch tail ])
  #askedAt?: Float64Array; // when each plan position was asked for (its latency), sample by sample (packets carry their own)
  readonly #conns = new Map<string, ConnCount>(); // per node (or connection) since the last hand-over
  readonly #onAbort = () => this.stop(new CassetteError("ERR_INVALID_OPTION", "Cannot read on: the loader's signal was aborted"));

  readonly #split?: RunPlan["split"];

  constructor(host: RunHost<S, T>, epoch: number, { ids: plan, split }: RunPlan) {
    const o = host.options;
    this.#host = host;
    this.#o = o;
    this.epoch = epoch;
    this.#plan = plan;
    this.#split = split;
    this.#ledger = new Ledger(plan.length);
    this.#assembler = new Assembler<T, S>(epoch, plan.length, o.batchSize, o.strict, o.transform ? false : { recycle: o.recycle });
    o.signal?.addEventListener("abort", this.#onAbort, { once: true });
    if (o.signal?.aborted) this.#onAbort();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The caller asked for this epoch: from now on its own window bounds it. */
  begin(window: Window): void {
    this.#window = window;
  }

  /** Starts reading ahead (before begin()), on the source the active epoch uses. */
  prime(source: Source<S>): void {
    this.#source = source;
    this.#choose();
    this.pump();
  }

  /** The ids it reads, in plan order. */
  get ids(): readonly string[] {
    return this.#plan;
  }

  get outstanding(): number {
    return this.#outstanding;
  }
  /** Samples requested so far. */
  get requestedSoFar(): number {
    return this.#next;
  }
  get allRequested(): boolean {
    return this.#next === this.#plan.length;
  }
  /** The window begin() gave it (none while read ahead). */
  get window(): Window | undefined {
    return this.#window;
  }
  windowSamples(): number {
    return this.#window?.samples() ?? 0;
  }
  prefetch(): number {
    return this.#window?.prefetch ?? 0;
  }

  async next(): Promise<IteratorResult<Batch<T>, undefined>> {
    const t0 = runtime.now();
    if (!this.#begun) {
      try {
        if (!this.#source) this.#host.opened(this, this.#source = await this.#host.source());
      } catch (e) {
        this.#finish();
        throw e;
      }
      this.#begun = true;
      this.#choose();
      this.#lastHandOver = runtime.now();
      this.pump();
    }
    for (;;) {
      if (this.#error) {
        this.#finish();
        throw this.#error;
      }
      const { batch, freed } = (this.#packets ?? this.#assembler).take(this.#next === this.#plan.length && this.#pending === 0);
      if (batch) {
        const now = runtime.now();
        this.#host.handedOver(batch, now - this.#lastHandOver, now - t0, this.#conns);
        this.#lastHandOver = now;
        this.#handed++;
        // Mid-epoch the consumer no longer waits; in the tail it soon will again (ended() stops it).
        if (this.#urging === "stall") {
          this.#urging = undefined;
          this.#host.urge(false);
        }
        this.#outstanding -= freed; // after handedOver: the memory bound counts the batch going out
        this.#window!.consumed();
        this.pump();
        return { value: batch, done: false };
      }
      this.#outstanding -= freed;
      if (this.#next === this.#plan.length && this.#pending === 0) {
        this.#finish();
        if (!this.#ledger.complete()) {
          throw new Error(`ledger: epoch ${this.epoch} ended with ${this.#ledger.delivered} delivered + ${this.#ledger.skipped} skipped of ${this.#ledger.size}`);
        }
        return { value: undefined, done: true };
      }
      // Nothing ready, the window full, and the source still taking requests: the window may
      // be too shallow for this link's latency. (A saturated source is the bottleneck itself:
      // deepening the window would only hold more memory.)
      if (this.#host.room(this) <= 0 && this.#next < this.#plan.length && !this.#saturated) {
        this.#host.starved(this.#window!);
        this.pump();
      }
      // The consumer waits on what is in flight alone: everything requested (the tail), or
      // mid-epoch with nothing more to ask for now, once a batch has shown the usual latency.
      if (this.#pending > 0 && this.#urging !== "tail") {
        const blocked = this.#host.room(this) <= 0 || this.#saturated;
        const want = this.#next === this.#plan.length ? "tail" : blocked && this.#handed > 0 ? "stall" : undefined;
        if (want && want !== this.#urging) {
          this.#urging = want;
          this.#host.urge(true, want === "stall");
        }
      }
      await new Promise<void>((r) => (this.#wake = r));
    }
  }

  /*
   * NOTE [ Epoch tail ]: an epoch ends only when its slowest sample is in, so a sample stuck
   * on a connection that turned slow holds up the last batch (and, in strict order, its own).
   * Once everything is requested and the consumer waits, samples pending far longer than
   * usual (3 × the median request time, and 100 ms more) are asked for once more; the source
   * sends them where they should finish first. This is HedgeSource's second trigger
   * (`urge`, src/read/hedge.ts), inside the retries: the first answer wins, the other is
   * dropped there, and an error waits for the other attempt. Option `reaskTail`.
   *
   * The same holds mid-epoch whenever the consumer waits with nothing more to ask for (the
   * window full of outstanding samples, or the source saturated): congestion that moves onto
   * the connection holding most of the window (the rate-based choice had sent it there, away
   * from the one congested before) leaves every outstanding sample stuck behind 1 MB/s, and
   * ready order stalled for the whole 2 s the congestion stayed (bench/RESULTS.md). Mid-epoch
   * the trigger waits for a first batch (the usual latency is not known before) and stops at
   * the next hand-over: only what stays stuck while the consumer waits is asked again. The read
   * path takes it only where a re-ask repeats a fetch alone: with decoding or a transform
   * beneath the re-ask, a sample slow mid-epoch is more often slow work than a stuck
   * connection, and asking again would run that work twice (src/read/read_path.ts).
   */

  /** Breaking out of `for await` ends the epoch. */
  return(): Promise<IteratorResult<Batch<T>, undefined>> {
    this.stop();
    return Promise.resolve({ value: undefined, done: true });
  }

  stop(error?: Error): void {
    if (this.finished) return;
    if (error) this.#error = error;
    this.stopped = true;
    this.#next = this.#plan.length; // request nothing more
    this.#finish();
    this.#wakeUp();
  }

  drained(): void {
    this.#saturated = false;
    this.pump();
  }

  #finish(): void {
    this.finished = true;
    this.#reads?.end();
    this.#host.ended(this.#window?.prefetch);
    this.#o.signal?.removeEventListener("abort", this.#onAbort);
    // Ended normally: the next epoch's read-ahead may now use the whole window.
    if (this.#window && !this.stopped && !this.#error && this.#source) this.#host.tail(this.#source);
  }

  /**
   * Packets when the source's workers can fill them and nothing must run per sample on this
   * thread (a transform function would): the run then asks for ranges of the plan and takes
   * packets whole (NOTE [ Packets ], src/read/packet.ts).
   */
  #choose(): void {
    if (this.#reads || this.#o.transform) return;
    const reader = this.#host.packets();
    if (!reader) return;
    this.#packets = new PacketAssembler<T>(this.epoch, this.#plan, this.#o.batchSize, this.#o.strict, this.epoch);
    this.#reads = reader.read(this.#plan, { batchSize: this.#o.batchSize, strict: this.#o.strict, split: this.#split, epoch: this.epoch }, {
      packet: (p) => this.#packet(p),
      lost: (ranges) => this.#lost(ranges),
    });
  }

  /** Requests as many samples as the window, the plan and the source allow. */
  pump(): void {
    const src = this.#source;
    if (!src || this.finished) return;
    if (this.#reads) return this.#pumpPackets(src);
    const now = runtime.now();
    for (let room = this.#host.room(this); room > 0 && !this.#saturated && this.#next < this.#plan.length; room--) {
      // Positions, not ids, from here on: the ledger and the strict assembler index by them.
      const pos = this.#next++;
      this.#ledger.requested(pos);
      (this.#askedAt ??= new Float64Array(this.#plan.length))[pos] = now;
      this.#outstanding++;
      this.#pending++;
      if (!src.fetch(this.#plan[pos], (err, s) => this.#arrived(pos, err, s), this.epoch)) this.#saturated = true;
    }
    this.#host.outstanding();
    if (this.#window && this.#next === this.#plan.length) this.#host.tail(src);
  }

  /**
   * Packet mode's requests: whole batches of the plan (ends on multiples of the batch size, so
   * that a strict batch is asked of one worker), or what room is left when nothing is pending
   * (a window narrower than a batch must still move).
   */
  #pumpPackets(src: Source<S>): void {
    const from = this.#next, len = this.#plan.length, B = this.#o.batchSize;
    let to = Math.min(len, from + Math.max(0, this.#host.room(this)));
    if (to < len) {
      const aligned = to - (to % B);
      if (aligned > from) to = aligned;
      else if (this.#pending > 0) to = from;
    }
    if (to > from) {
      this.#ledger.requestRange(from, to);
      this.#next = to;
      this.#outstanding += to - from;
      this.#pending += to - from;
      this.#reads!.request([from, to]);
    }
    this.#host.outstanding();
    if (this.#window && this.#next === len) this.#host.tail(src);
  }

  /** A packet came: its entries delivered (a duplicate dropped), its errors skipped or raised. */
  #packet(p: Packet): void {
    if (this.finished && !this.#error) return;
    for (const { pos, error } of p.errors) {
      if (!this.#ledger.isPending(pos)) continue;
      this.#pending--;
      if (this.#o.skipErrors) this.#skip(pos, error.message);
      else this.#error ??= packetError(error, this.#plan[pos], this.epoch, this.#source?.name);
    }
    const n = p.n, cols = p.cols;
    let keep: number[] | undefined;
    for (let i = 0; i < n; i++) {
      if (this.#ledger.deliver(cols[POS * n + i])) keep?.push(i);
      else {
        // Rare (a worker replaced while its answer was on the way): a packet without it.
        keep ??= Array.from({ length: i }, (_, j) => j);
        this.#host.duplicate();
      }
    }
    const delivered = keep ? keep.length : n;
    this.#pending -= delivered;
    if (delivered > 0) {
      this.#host.answeredMany(p.ms, n, p.used, runtime.now());
      if (p.conns.length) {
        const counts = new Uint32Array(p.conns.length);
        for (let i = 0; i < n; i++) if (cols[CONN * n + i] >= 0) counts[cols[CONN * n + i]]++;
        const bytes = cols[OFFSETS * n + n] / n; // the bytes fetched per connection, at the packet's mean size
        p.conns.forEach((name, c) => {
          if (!counts[c]) return;
          const had = this.#conns.get(name);
          if (had) had.bytes += counts[c] * bytes, had.samples += counts[c];
          else this.#conns.set(name, { bytes: counts[c] * bytes, samples: counts[c] });
        });
      }
      // Without the entries not kept (answered already): a copy of the rest.
      this.#packets!.add(keep ? mergePackets(p.run, [[p, keep]]) : p);
      if (keep) p.release?.(); // copied
    }
    this.#wakeUp();
  }

  /** A worker stopped holding `ranges`: what is still pending there is asked for again. */
  #lost(ranges: readonly number[]): number {
    if (this.finished) return 0;
    const again: number[] = [];
    for (let r = 0; r < ranges.length; r += 2) {
      let start = -1;
      for (let pos = ranges[r]; pos <= ranges[r + 1]; pos++) {
        const pending = pos < ranges[r + 1] && this.#ledger.isPending(pos);
        if (pending && start < 0) start = pos;
        else if (!pending && start >= 0) again.push(start, pos), (start = -1);
      }
    }
    if (again.length) this.#reads!.request(again);
    let n = 0;
    for (let k = 0; k < again.length; k += 2) n += again[k + 1] - again[k];
    return n;
  }

  #arrived(pos: number, err: Error | null, s?: S): void {
    if (this.finished && !this.#error) return;
    const id = this.#plan[pos];
    if (err || !s) {
      this.#pending--;
      if (this.#o.skipErrors) this.#skip(pos, err?.message ?? "no sample came back");
      else {
        // An error that carries the sample's id (src/read's SampleDecodeError: its key and id,
        // the source) already names it: it gets the epoch only, so each is said once.
        const named = (err as { id?: unknown } | null)?.id === id;
        this.#error ??= new CassetteError(
          ((err as { code?: string })?.code?.startsWith?.("ERR_") ? (err as CassetteError).code : "ERR_STORE_UNREACHABLE"),
          named ? `${err!.message} (epoch ${this.epoch})` : `Cannot read sample ${id} of epoch ${this.epoch} from ${this.#source?.name}: ${err?.message}`,
          { cause: err },
        );
      }
      return this.#wakeUp();
    }
    if (!this.#ledger.deliver(pos)) return this.#host.duplicate();
    // What the sample holds while it waits: its bytes, and its pixels when the read path decoded it.
    const image = (s as { image?: { data?: { byteLength: number } } }).image;
    const now = runtime.now();
    this.#host.answered(now - this.#askedAt![pos], s.data.length + (image?.data?.byteLength ?? 0), now);
    if (s.conn) {
      const c = this.#conns.get(s.conn);
      if (c) c.bytes += s.data.length, c.samples++;
      else this.#conns.set(s.conn, { bytes: s.data.length, samples: 1 });
    }
    const transform = this.#o.transform;
    if (!transform) return this.#ready(pos, s, s as unknown as T);
    let out: T | Promise<T>;
    try {
      out = transform(s);
    } catch (e) {
      return this.#transformFailed(pos, e as Error);
    }
    // A transform that answers at once (train.ts's, with read workers) costs no promise and no
    // trip through the microtask queue.
    if (typeof (out as { then?: unknown } | null)?.then !== "function") return this.#ready(pos, s, out as T);
    (out as Promise<T>).then((item) => this.#ready(pos, s, item), (e) => this.#transformFailed(pos, e));
  }

  #skip(pos: number, reason: string): void {
    this.#ledger.skip(pos);
    (this.#packets ?? this.#assembler).skip(pos);
    this.#host.skipped(this.epoch, this.#plan[pos], reason);
  }

  #transformFailed(pos: number, e: Error): void {
    this.#pending--;
    if (this.#o.skipErrors) this.#skip(pos, e?.message ?? String(e));
    else {
      // Named by sample and epoch, whatever threw (a decoder's error names only a byte offset).
      const code = e instanceof CassetteError ? e.code : "ERR_MALFORMED_INPUT";
      this.#error ??= new CassetteError(code, `Cannot transform sample ${this.#plan[pos]} of epoch ${this.epoch}: ${e.message}`, { cause: e });
    }
    this.#wakeUp();
  }

  #ready(pos: number, s: S, item: T): void {
    this.#pending--;
    this.#assembler.add(pos, s, item);
    this.#wakeUp();
  }

  #wakeUp(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }
}

/** A sample's error from a worker, named by sample and epoch as the per-sample path names it. */
function packetError(e: SerializedError, id: string, epoch: number, source?: string): CassetteError {
  const code = e.code?.startsWith("ERR_") ? (e.code as ErrorCode) : "ERR_STORE_UNREACHABLE";
  // A decode error names its sample already (src/read/decode_source.ts).
  return new CassetteError(code, e.name === "SampleDecodeError" ? `${e.message} (epoch ${epoch})` : `Cannot read sample ${id} of epoch ${epoch} from ${source}: ${e.message}`);
}
