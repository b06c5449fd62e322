/**
 * A Source is the read side of a store as the loader sees it: one request per sample (batch
 * disassembly, ConcurrentDataLoader §2), answered in whatever order the network gives.
 *
 * Backpressure is a return value, as undici's dispatch(): `fetch` returns false when the source
 * is saturated, and the source calls its drain listener when it can take more. The scheduler
 * never polls.
 *
 * A source hands over bytes, never pixels: decoding is composed on top of it in src/read/.
 */

/** What a source answers for one id: the label travels with the bytes. */
export interface Fetched {
  /** The sample's id. */
  id: string;
  /** The class (src/dataset/label.ts: -1 where the label is not a class). */
  label: number;
  /** The sample's bytes as stored (an encoded image). */
  data: Uint8Array;
  /**
   * Labels other than one integer (label.ts): a float vector (multi-hot over the classes, or the
   * floats), or the label's bytes (a mask, which the read path decodes into `Sample.mask`).
   */
  target?: Float32Array | Uint8Array;
  /** Which connection or worker served it (for per-connection statistics), if known. */
  conn?: string;
}

/** Answers one `Source.fetch`: an error, or the sample. */
export type FetchCallback<S extends Fetched = Fetched> = (err: Error | null, sample?: S) => void;

/** The read side of a store; `S` is what it answers with (src/read/ adds decoded pixels). */
export interface Source<S extends Fetched = Fetched> {
  /** For messages and statistics, e.g. "cassandra://127.0.0.1/ks (fashion-mnist)". */
  readonly name: string;
  /** The dataset it reads, when it knows (an export's labels.json names it). */
  readonly dataset?: string;
  /**
   * Every sample id it can serve, where the store can list them (a store's scan, an export's
   * labels.json); absent where it cannot.
   */
  ids?(): string[] | Promise<string[]>;
  /**
   * Its ids by shard, in the order the store holds them, where it is a shard set (a WebDataset
   * source: the Loader then plans shard by shard, plan/epoch.ts `groups`); absent otherwise.
   */
  shards?(): string[][];
  /**
   * Told by the Loader, before an epoch's first request, the order in which it will ask for the
   * ids of `epoch` (and of the epoch after): a source that keeps samples (a cache,
   * src/source/cache/) plans with it; absent on sources that do not.
   */
  plan?(epoch: number, ids: readonly string[]): void;
  /**
   * Bytes received from the store so far, where the source streams more than the samples' own
   * bytes or reads them again (a WebDataset shard's tar, resumes included): what left the
   * bucket for it. Absent where it does not count them.
   */
  received?(): number;
  /**
   * Starts fetching `id`; returns false when no more requests should be made until drain.
   * `epoch`: the epoch the Loader asks for it in, where it knows (a planned decode draws the
   * sample's box from it: src/read/decode_source.ts); sources that need it not ignore it.
   */
  fetch(id: string, done: FetchCallback<S>, epoch?: number): boolean;
  /** Called when a saturated source can take requests again. */
  onDrain(listener: () => void): void;
  /** Requests started and not yet answered. */
  inFlight(): number;
  /** Closes the source's connections, files or workers. */
  close(): Promise<void>;
}

/**
 * Shared bookkeeping for sources with a request capacity (fixed, or raised as connections open): counts in-flight requests,
 * answers `fetch` with false at capacity and calls drain listeners when a slot frees up.
 */
export class Capacity {
  #max: number;
  #inFlight = 0;
  #saturated = false;
  readonly #listeners: (() => void)[] = [];

  constructor(max: number) {
    this.#max = max;
  }
  get max(): number {
    return this.#max;
  }
  /** Raises the capacity (a source that opened another connection): a saturated source drains. */
  raise(max: number): void {
    if (max <= this.#max) return;
    this.#max = max;
    this.#drainIfRoom();
  }
  /** Takes a slot; returns whether more requests may follow. */
  take(): boolean {
    this.#inFlight++;
    if (this.#inFlight >= this.#max) this.#saturated = true;
    return !this.#saturated;
  }
  release(): void {
    this.#inFlight--;
    this.#drainIfRoom();
  }
  #drainIfRoom(): void {
    if (this.#saturated && this.#inFlight < this.#max) {
      this.#saturated = false;
      for (const l of this.#listeners) l();
    }
  }
  onDrain(l: () => void): void {
    this.#listeners.push(l);
  }
  get inFlight(): number {
    return this.#inFlight;
  }
}
