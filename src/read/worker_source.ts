/**
 * Reading in worker threads: a Source whose fetches run in N read workers (read_worker.ts),
 * each with its own store source and connections, and, with `decode`, its own wasm decoder.
 * The loader's thread keeps the plan, the ledger and the assembler; the driver's per-request
 * work (encoding, parsing, UUIDs, buffers, garbage) and the decoding move off it. That thread
 * is the one that submits training steps, and on a CPU WebGPU adapter (lavapipe) it also runs
 * them, so every microsecond taken from it is taken from training; with a fast GPU, one thread
 * of driver work caps the samples per second that can be fed at all.
 *
 *   fetch(id) ─► the worker with the fewest requests in flight; ids batched per microtask
 *                  │ { t: "fetch", seqs, ids }
 *                  ▼
 *   worker: source.fetch ─► (decode) ─► packet per event-loop turn: one buffer, transferred
 *                  │ { t: "packet", packet } (run 0: src/read/packet.ts's format)
 *                  ▼
 *   each answer's callback, its bytes and pixels views into the packet's buffer
 *
 * Every request has its own sequence number, so a hedged second request for the same id is
 * answered on its own. A worker that dies fails its requests as retryable (the loader's
 * retries send them to another worker) and is replaced.
 *
 * @example
 * ```ts
 * import { openWorkerSource } from "./worker_source.ts";
 * import { openStore } from "../source/open.ts";
 * import { ingest } from "../dataset/ingest.ts";
 * const store = await openStore("sqlite:.tmp/worker-source-example.sqlite");
 * await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 4 });
 * const ids = (await Array.fromAsync(store.scanNat("fm"))).flat().map((r) => r.id);
 * await store.close();
 * const source = await openWorkerSource("sqlite:.tmp/worker-source-example.sqlite", "fm", { workers: 2, decode: true });
 * const got = await Promise.all(ids.map((id) => new Promise<any>((resolve, reject) => source.fetch(id, (e, s) => (e ? reject(e) : resolve(s))))));
 * console.log(got.length, got.every((s) => s.image.width === 28)); // 8 true
 * await source.close();
 * ```
 */
import { runtime, type WorkerHandle } from "../../runtime-adapters/index.ts";
import { CassetteError, type ErrorCode } from "../errors.ts";
import { checkDecodeOptions, type DecodeOptions, readDecodeOptions } from "../decode/decoder.ts";
import type { PlannedDecode } from "../decode/crop.ts";
import { redact } from "../source/address.ts";
import { storeKind } from "../source/kinds.ts";
import { entryUrl } from "../util/entry_url.ts";
import { Capacity, type FetchCallback } from "../source/source.ts";
import type { ReadSource, Sample } from "./sample.ts";
import type { HedgeOptions } from "./hedge.ts";
import { column, type LaneCounts, type Packet as BatchPacket, POS, type PacketRead, type PacketReader, type PacketSink, type ReadCounts, sampleOf, type SerializedError, type WirePacket } from "./packet.ts";
import type { PoolStats } from "../decode/pool.ts";
import { Scaler } from "../decode/scaler.ts";

export type { SerializedError };

export type ToWorker =
  | {
    t: "open"; address: string; dataset?: string; maxInFlight?: number; balance?: "rate" | "driver"; decode?: boolean | "hybrid" | "gpu" | DecodeOptions | PlannedDecode;
    transform?: { url: string; options?: unknown }; seed?: number; reads?: PacketReadOptions;
    /** The slow lane (NOTE [ Read workers: the slow lane ]): the workers' status, this one's place in it and its code, the clock's base. */
    lane?: { status: SharedArrayBuffer; index: number; code: number; base: number };
    /** false: packets in buffers of their own, transferred, not in slabs (NOTE [ Packet slabs ], src/read/packet.ts). */
    slabs?: boolean;
  }
  /** A split's ids joined by "\n", sent once: plans drawn from it come as positions in it. */
  | { t: "split"; split: number; ids: string }
  /** A packet read's plan: positions in a split sent before, or its ids joined by "\n". */
  | {
    t: "plan"; run: number; split?: number; order?: Int32Array; ids?: string; batchSize: number; strict: boolean;
    /** The epoch the plan is of: a planned decode draws each sample's box from it (src/gpu/decode_planned.ts). */
    epoch?: number;
    /** Per plan position, the code of the worker it is asked of (negative: started there), shared: the slow lane's claims. */
    owner?: Int32Array;
  }
  /**
   * Plan positions to read, ranges[i] ([from, to) pairs) of runs[i], and packets' buffers back
   * once their batches were consumed (the worker fills them again): one message a turn, as
   * posting a message costs the loader's thread more than anything else it does per batch.
   */
  | {
    t: "read"; runs: number[]; ranges: Int32Array[]; free: ArrayBuffer[];
    /** Slabs done with: > 0 released (this thread keeps the buffer), < 0 collected here (send it again). */
    slabs?: number[];
  }
  | { t: "end"; run: number }
  | { t: "urge"; on: boolean }
  /** `ids` joined by "\n": one string crosses, not one per request. */
  | { t: "fetch"; seqs: Int32Array; ids: string }
  | { t: "close" };

type FromWorker =
  | { t: "opened"; name: string; dataset?: string; shards?: string[][]; receives?: boolean }
  | { t: "failed"; error: SerializedError }
  | { t: "packet"; packet: WirePacket }
  | { t: "closed" };

/** How a worker reads for packets: its retries and hedging, as the loader's thread does per sample. */
export interface PacketReadOptions {
  /** Attempts after the first, per sample (as RetryOptions.retries). */
  retries?: number;
  /** Hedged requests inside the worker (as HedgeSource's options). */
  hedge?: HedgeOptions;
  /** Ask again, at an epoch's tail, for samples pending far longer than usual. */
  reaskTail?: boolean;
}

/** How `openWorkerSource` runs read workers: how many (fixed or scaled), how they read (retries, hedging, slow lane, packets) and whether they decode or transform. */
export interface WorkerSourceOptions {
  /** Read workers (default 2). Each opens the store with its own connections. */
  workers?: number;
  /** Decode each sample in its worker and hand it over as `Sample.image` (default false). */
  decode?: boolean | "hybrid" | "gpu" | DecodeOptions | PlannedDecode;
  /** A transform module each worker loads and runs after decoding (its URL and options). */
  transform?: { url: string; options?: unknown };
  /** Seeds the transform's `ctx.random` (with the worker's index). */
  seed?: number;
  /** Cap on requests in flight over all workers (default: none here; each worker's source caps its own). */
  maxInFlight?: number;
  /** Cassandra: how each worker spreads requests over its connections (default "rate"). */
  balance?: "rate" | "driver";
  /** The worker entry (default: read_worker.ts beside this file, or source/read_worker.js in the bundle). */
  workerUrl?: URL;
  /** Retries and hedging inside the workers for packet reads (NOTE [ Packets ], src/read/packet.ts). */
  reads?: PacketReadOptions;
  /** Packet reads: a worker stuck on a slow sample gives the samples it has not started to the others (default true). */
  slowLane?: boolean;
  /**
   * Packet reads fill slabs, shared buffers that cross once (NOTE [ Packet slabs ],
   * src/read/packet.ts; default true, or CASSETTE_PACKET_SLABS=0 for false: the bench's A/B).
   */
  slabs?: boolean;
  /**
   * Size the workers as reading goes, between `min` and `max`, by NOTE [ Worker scaling ]'s rule
   * (src/decode/scaler.ts): the consumer's waits (`demand`), the idle cores, and the workers'
   * own CPU time (default: `workers`, fixed).
   */
  scale?: { min: number; max: number; cpuTimes?: () => { cores: number; idleMs: number; totalMs: number } };
}

/*
 * NOTE [ Read workers: the slow lane ]: the decode pool's rule (NOTE [ Slow lane ] in
 * src/decode/pool.ts) for read workers' packet reads. Each run's plan has a shared Int32 per
 * position, its owner: the code of the worker it was asked of (written when the range is
 * asked: one fill per batch). A worker claims a sample as its bytes arrive, before decoding
 * it, by swapping its code for its negation; it stamps the claim's start in its status (and
 * the deadline it learned from its own job times: src/decode/deadline.ts, never under 5 ms
 * here, as a worker's collector pauses during 7 µs decodes tripped 1 ms). Every LANE_CHECK_MS
 * while runs read (a timer: a check per packet cost this thread more), this thread looks for a
 * worker past its deadline. That worker takes the slow lane: it gets no new requests until it
 * claims again, and each position it holds and has not started is swapped to another worker's
 * code (one side wins: a swap from the code, or the worker's claim) and asked of that worker
 * (later checks go on while none was free), half of them at a time and only while another
 * worker has run dry, as work stealing takes half. The slow worker, when free, finds those positions
 * no longer its own and drops them unread (TAKEN_BACK). Two requests for one id in flight in
 * one worker are kept there (an answer could not say which it claims). A lost worker's
 * positions are asked again as before, the fill giving them to the new owner: a terminated
 * worker still running cannot claim them. Exactly once holds by the owner: one worker decodes
 * and sends each position. In ready order a worker also sends a packet before it is full once
 * its first answer has waited the deadline (read_worker.ts `waited`): with a heavy CPU stage a
 * batch's samples would otherwise wait for each other in the worker, and for a slow one among
 * them; Fashion-MNIST fills a packet long before the 5 ms floor.
 *
 * What it gives and costs (bench/RESULTS.md, "Read workers' slow lane"): a worker stuck 600 ms
 * on one sample sends nothing for 600 ms without it, and with it the other worker sends the 47
 * samples queued behind it first (test/read/worker_source.test.ts). On MINATOLoader's load
 * (bench/minato.bench.ts: 1 in 10 samples 50-150 ms of CPU) read workers kept the consumer
 * waiting 3.6 % of its step with the lane (4.2 % before packets went at the deadline), 5.0 %
 * without, where the decode pool did 1.2-1.9 %: a read worker reads and transforms in one
 * thread and holds the answers of a packet until it goes, so a heavy CPU stage is still better
 * served by the pool, which readWorkers() keeps for a transform module. The claims cost a worker ~0.3 µs a sample: Fashion-MNIST in a tight loop read 6 %
 * slower with the lane (105 600 vs 112 400 samples/s), and the same with a 1 ms step.
 */
/**
 * Status Int32s per worker: claim sequence, start (ms since base, + 1; 0: idle), deadline (µs;
 * 0: learning), the claim moved; 16 (64 bytes, a cache line) apart, so that one worker's stamps
 * do not evict another's line at every sample.
 */
export const STATUS = 16, ST_SEQ = 0, ST_START = 1, ST_DEADLINE = 2, ST_MOVED = 3;
const LANE_CHECK_MS = 10;
/** Ticks of LANE_CHECK_MS per scaling period (250 ms, as the decode pool's). */
const SCALE_TICKS = 25;

/** A packet read as the loader's thread keeps it: the plan to send a replacement worker, where its last chunk went. */
interface Run {
  /** The plan: positions in a split the workers hold, or its ids joined. */
  split?: number;
  order?: Int32Array;
  ids?: string;
  batchSize: number;
  strict: boolean;
  epoch?: number;
  sink: PacketSink;
  chunk: number;
  slot?: Slot;
  /** The slow lane's claims (NOTE [ Read workers: the slow lane ]). */
  owner?: Int32Array;
}

/*
 * NOTE [ Read workers: how many ]: `workers: "auto"` reads in max(2, min(8, cores − 2)) workers
 * where the target is an address (each worker opens it), else in the calling thread. With
 * packets (src/read/packet.ts) the feeding thread's cost no longer grows with them, so the
 * rule is the cores': on the 2-core VM 2 workers read Fashion-MNIST from SQLite 3.7× as fast
 * as the thread itself (1 worker: 2.0×), and train.ts on lavapipe, whose training takes the
 * same cores, ran 9.0-9.3 s for 0, 1 and 2 workers alike: reading in the thread never won
 * (bench/RESULTS.md, "Packets"). Two cores stay for the thread that feeds the GPU and the
 * GPU's driver. On more than 4 cores "auto" starts there and sizes them as reading goes,
 * between 2 and cores − 1 (workerScale, and WorkerSource's #scale: NOTE [ Worker scaling ]'s
 * rule, the busy time a worker's time holding requests, a new worker taking half of the
 * busiest one's queue); how far that is from the best fixed count on a 16-core machine is for
 * the GPU kit to say (tools/gpu/measure.sh runs 1-14 fixed, and train.ts's defaults).
 */
/** The read workers "auto" means on a machine of `cores` cores. */
export function autoWorkers(cores: number = runtime.cpuTimes().cores): number {
  return Math.max(2, Math.min(8, cores - 2));
}

/**
 * The read workers for `workers` as given: a number as it is; "auto" (or nothing) is
 * autoWorkers() for an address, but none for an open Store or Source (there is no address to
 * open in a worker), where the decode pool is asked for (a `decodeWorkers` count), or for a
 * transform, a function (samples are then handed over one by one: workers would only add their
 * messages) or a module: the decode pool runs a heavy CPU stage better than read workers do
 * (NOTE [ Read workers: the slow lane ]), and `workers: N` puts it in read workers all the same.
 * None either for a cache (read and written in this thread), nor for shards (a kind whose
 * sources answer `shards()`: `wds:`) with or without `rankShards`: the epoch is then streamed
 * once, here, shard by shard, where read workers would each stream every shard their batches
 * fall in (the shard-aware plan interleaves a block of shards in every batch: up to once a
 * worker: twice the bytes and 0.7× the samples/s on the ImageNet-like set's 3 shards with two,
 * bench/RESULTS.md); the decode pool decodes.
 */
export function readWorkers(target: unknown, o: { workers?: number | "auto"; decodeWorkers?: number | "auto"; transform?: unknown; cache?: unknown; rankShards?: boolean }): number {
  if (typeof o.workers === "number") return o.workers;
  if (typeof target !== "string" || o.transform || o.cache || o.rankShards || (o.decodeWorkers !== undefined && o.decodeWorkers !== "auto")) return 0;
  if (storeKind(target)?.shards) return 0;
  return autoWorkers();
}

/**
 * NOTE [ Read workers: how many ]: "auto" (nothing given) on a machine of more than 4 cores
 * also sizes the read workers as they go (NOTE [ Worker scaling ]), from autoWorkers() between
 * 2 and cores − 1; on fewer cores the measured 2 stay fixed. A count given is kept.
 */
export function workerScale(workers: number, given: unknown, cores: number = runtime.cpuTimes().cores): { min: number; max: number } | undefined {
  if (typeof given === "number" || workers === 0 || cores <= 4) return undefined;
  return { min: 2, max: Math.max(workers, cores - 1) };
}

const DEFAULT_WORKER_URL = entryUrl(import.meta.url, "./read_worker.ts", "read/read_worker.js");

interface Slot {
  index: number;
  worker: WorkerHandle;
  /** seq → [id, callback] of requests sent to this worker and not answered. */
  inFlight: Map<number, [string, FetchCallback<Sample>]>;
  /** Requests to send at the next microtask. */
  seqs: number[];
  ids: string[];
  opened: Promise<Extract<FromWorker, { t: "opened" }>>;
  closed?: () => void;
  /** Stopped, and its replacement not started yet: gets no requests. */
  down?: boolean;
  /** Packet reads: ranges asked of this worker per run (what to ask again if it stops), to send at the next microtask, and positions outstanding. */
  reads: Map<number, number[]>;
  out: Map<number, number[]>;
  load: number;
  /** `load` by run: what a run that ends leaves unanswered here is no longer load. */
  runLoad: Map<number, number>;
  /** Splits this worker was sent. */
  splits: Set<number>;
  /** Packet buffers released, to go back with the next message; slabs released (> 0) or collected (< 0). */
  freed: ArrayBuffer[];
  freedSlabs: number[];
  /** Slabs of this worker's this thread holds while they are free to fill again (NOTE [ Packet slabs ]). */
  slabs: Map<number, ArrayBuffer>;
  /** Its packet reads' counters, as its last packet said. */
  counts?: ReadCounts;
  /** This worker's code in the runs' owners: new for each worker started. */
  code: number;
  /** In the slow lane since its claim of this sequence number: gets no requests. */
  slow?: number;
  /** In the lane and holding positions not yet given to another worker (given half at a time). */
  queued?: boolean;
  /** Its slow lane's figures, as its last packet said. */
  lane?: LaneCounts;
  /** Scaling: the ticks of this period it held work (requests unanswered). */
  busyTicks: number;
  /** Being retired by the scaler: gets no requests, and stops once it holds none. */
  retiring?: boolean;
  /** Retired: stopped on purpose, not replaced. */
  retired?: boolean;
}

/** Starts the workers and resolves once each has opened the store (the first failure rejects, naming the address). */
export async function openWorkerSource(address: string, dataset: string | undefined, options: WorkerSourceOptions = {}): Promise<WorkerSource> {
  const source = new WorkerSource(address, dataset, options);
  try {
    await source.ready;
  } catch (e) {
    await source.close();
    throw e;
  }
  return source;
}

// Also a PacketReader (src/read/packet.ts), which read_path.ts's packets() checks by returning it
// as one: the packet protocol is internal, so the public class does not name it (deno doc --lint).
/** Read workers: each opens the store with its own connections, reads (and decodes) samples on its own thread, and hands them over; made by `openWorkerSource`. */
export class WorkerSource implements ReadSource {
  /** The store's name, as the workers' sources give it. */
  name: string;
  /** The dataset read, when the store says. */
  dataset?: string;
  /** The store's ids by shard, as the first worker's source gives them, where it is a shard set. */
  shards?: () => string[][];
  /** Workers it started with. */
  readonly size: number;
  /** Resolves when every worker has opened the store. */
  readonly ready: Promise<void>;
  readonly #address: string;
  readonly #open: Extract<ToWorker, { t: "open" }>;
  readonly #url: URL;
  readonly #slots: Slot[] = [];
  readonly #cap: Capacity;
  #seq = 0;
  #flushQueued = false;
  #closed = false;
  #started = false; // every first worker opened: a later failure is a replacement's
  #failures = 0; // workers lost in a row without one opening since: the respawn's backoff
  readonly #runs = new Map<number, Run>();
  /** Splits plans were drawn from, joined once (train and test: a loader's one or two). */
  readonly #splits = new Map<readonly string[], { id: number; joined: string }>();
  #runSeq = 0;
  /** Ranges asked for while no worker was running: sent to the next one that starts. */
  #orphans: [number, number, number][] = [];
  // The slow lane (NOTE [ Read workers: the slow lane ]).
  readonly #lanes: boolean;
  readonly #status: Int32Array;
  readonly #scaler?: Scaler;
  /** Serving workers wanted (the scaler's), and [ms since start, workers] at each change. */
  #target: number;
  readonly #history: [number, number][] = [];
  #ticks = 0;
  #periodStart = 0;
  readonly #base = Math.floor(performance.timeOrigin + performance.now());
  readonly #base0 = runtime.now();
  #codes = 0;
  #ticker?: ReturnType<typeof setInterval>;
  #slowLane = 0;
  #stolen = 0;
  /** A slab collected here unreleased (its batch dropped): its worker may fill it again, and sends it again. */
  readonly #slabsGone = new FinalizationRegistry<{ slot: Slot; id: number }>(({ slot, id }) => {
    if (slot.down || this.#closed) return;
    slot.freedSlabs.push(-id);
    this.#queueFlush();
  });

  /** Starts the workers; `openWorkerSource` also waits until they are ready. */
  constructor(address: string, dataset: string | undefined, options: WorkerSourceOptions = {}) {
    const n = options.workers ?? 2;
    if (!Number.isInteger(n) || n < 1) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot read in worker threads as 'workers' must be a positive integer: current value is ${n}`);
    }
    if (options.decode !== undefined && typeof options.decode !== "boolean") checkDecodeOptions(readDecodeOptions(options.decode)!);
    this.size = n;
    this.#address = address;
    this.name = `${redact(address)}${dataset ? ` (${dataset})` : ""}`;
    this.dataset = dataset;
    this.#url = options.workerUrl ?? DEFAULT_WORKER_URL;
    this.#open = {
      t: "open", address, dataset, balance: options.balance, decode: options.decode, transform: options.transform, seed: options.seed, reads: options.reads,
      slabs: options.slabs ?? runtime.env("CASSETTE_PACKET_SLABS") !== "0",
    };
    // The cap is shared: each worker's own source is given its part of it.
    if (options.maxInFlight !== undefined) this.#open.maxInFlight = Math.max(1, Math.ceil(options.maxInFlight / n));
    this.#cap = new Capacity(options.maxInFlight ?? Infinity);
    this.#lanes = options.slowLane ?? true;
    if (options.scale) {
      const { min, max } = options.scale;
      if (!Number.isInteger(min) || !Number.isInteger(max) || min < 1 || max < min) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot read in worker threads as 'scale' must be whole numbers 1 ≤ min ≤ max: current value is ${JSON.stringify(options.scale)}`);
      }
      this.#scaler = new Scaler({ min, max, cpuTimes: options.scale.cpuTimes });
    }
    this.#target = n;
    // Room for the retiring workers beside the most serving ones (resize() past twice the
    // first count, without `scale`, waits for retired ones' places).
    this.#status = new Int32Array(new SharedArrayBuffer(2 * Math.max(n, options.scale?.max ?? 0) * STATUS * 4));
    for (let i = 0; i < n; i++) this.#spawn(i);
    this.#history.push([0, n]);
    this.ready = Promise.all(this.#slots.map((s) => s.opened)).then(([first]) => {
      this.#started = true;
      this.name = `${first.name}, ${n} read worker${n === 1 ? "" : "s"}`;
      this.dataset ??= first.dataset;
      const groups = first.shards;
      if (groups) this.shards = () => groups;
    });
    this.ready.catch(() => {}); // openWorkerSource reports it; a bare constructor's caller awaits `ready`
  }

  #spawn(index: number): Slot {
    const worker = runtime.spawnWorker(this.#url);
    let opened!: (m: Extract<FromWorker, { t: "opened" }>) => void, failed!: (e: Error) => void;
    const slot: Slot = {
      index, worker, inFlight: new Map(), seqs: [], ids: [], reads: new Map(), out: new Map(), load: 0, runLoad: new Map(), splits: new Set(), freed: [], freedSlabs: [], slabs: new Map(), code: ++this.#codes, busyTicks: 0,
      opened: new Promise((res, rej) => ((opened = res), (failed = rej))),
    };
    slot.opened.catch(() => {});
    this.#slots[index] = slot;
    worker.onmessage = (ev) => {
      const msg = ev.data as FromWorker;
      switch (msg.t) {
        case "packet":
          return this.#packet(slot, msg.packet);
        case "opened":
          this.#failures = 0;
          if (msg.receives) this.#receives = true;
          return opened(msg);
        case "failed": {
          const err = revive(msg.error, `Cannot open ${redact(this.#address)} in read worker ${index}: `);
          failed(err);
          // A replacement that cannot open (the store is down): its requests would wait forever.
          if (this.#started) this.#lost(slot, err);
          return;
        }
        case "closed":
          return slot.closed?.();
      }
    };
    worker.onerror = (err) => {
      failed(new CassetteError("ERR_RUNTIME", `Cannot start read worker ${index}: ${err.message}`, { cause: err }));
      this.#lost(slot, err);
    };
    // Each worker draws its own augmentations: its index goes into its seed.
    this.#status.fill(0, index * STATUS, (index + 1) * STATUS);
    // Owners and claims serve the lane and the scaler alike (both give a worker's queue to another).
    const lane = this.#lanes || this.#scaler ? { status: this.#status.buffer as SharedArrayBuffer, index, code: slot.code, base: this.#base } : undefined;
    worker.postMessage({ ...this.#open, seed: ((this.#open.seed ?? 0) ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0, lane } satisfies ToWorker);
    // A replacement reads on for the runs in progress, and takes what found no worker.
    for (const [run, r] of this.#runs) this.#sendPlan(slot, run, r);
    const orphans = this.#orphans;
    this.#orphans = [];
    for (const [run, from, to] of orphans) if (this.#runs.has(run)) this.#assign(slot, run, from, to);
    return slot;
  }

  /**
   * A worker died or could not open the store: its requests fail as retryable (another worker,
   * or a later attempt, can serve them), and a new one takes its place, at once the first time
   * and then after a backoff that doubles up to 5 s while replacements keep failing.
   */
  #lost(slot: Slot, err: Error): void {
    if (this.#slots[slot.index] !== slot || slot.down) return;
    slot.down = true;
    slot.worker.terminate();
    const failed = [...slot.inFlight.entries()];
    slot.inFlight.clear();
    slot.seqs.length = slot.ids.length = 0;
    // Its packet reads: each run asks again for what is still pending of what this worker held
    // (its packets not yet received are dropped with it: #packet ignores a stopped slot).
    const reads = [...slot.reads];
    slot.reads.clear();
    // What it counted is kept; what it held and had not sent is asked again: retries too.
    this.#keepCounts(slot);
    slot.out.clear();
    queueMicrotask(() => {
      for (const [run, ranges] of reads) this.#gone.retries += this.#runs.get(run)?.sink.lost(ranges) ?? 0;
    });
    const delay = this.#failures === 0 ? 0 : Math.min(5000, 100 * 2 ** this.#failures);
    this.#failures++;
    if (slot.retiring) slot.retired = true; // the scaler was letting it go: not replaced
    else if (!this.#closed) setTimeout(() => this.#closed || this.#slots[slot.index] !== slot || this.#spawn(slot.index), delay);
    for (const [, [id, done]] of failed) {
      this.#cap.release();
      done(Object.assign(new CassetteError("ERR_RUNTIME", `Cannot read sample ${id} as read worker ${slot.index} stopped: ${err.message}`, { cause: err }), { retryable: true }));
    }
  }

  /** Asks a worker for sample `id` (the least loaded); returns false when `maxInFlight` requests are in flight. */
  fetch(id: string, done: FetchCallback<Sample>): boolean {
    if (this.#closed) {
      done(new CassetteError("ERR_INVALID_OPTION", `Cannot read sample ${id} as the source ${this.name} is closed`));
      return false;
    }
    const best = this.#leastLoaded();
    if (!best) {
      // Every worker is being replaced: fail now, as a lost connection would; the loader's
      // retries come back after their backoff.
      queueMicrotask(() => done(Object.assign(new CassetteError("ERR_STORE_UNREACHABLE", `Cannot read sample ${id} as no read worker of ${this.name} is running (the last ones stopped or could not open the store)`), { retryable: true })));
      return true;
    }
    const seq = this.#seq = (this.#seq + 1) | 0;
    best.inFlight.set(seq, [id, done]);
    best.seqs.push(seq);
    best.ids.push(id);
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      queueMicrotask(() => this.#flush());
    }
    return this.#cap.take();
  }

  /** The least loaded worker running, out of the slow lane where one is (`but`: not that one). */
  #leastLoaded(but?: Slot): Slot | undefined {
    let best: Slot | undefined;
    for (const s of this.#slots) {
      if (s.down || s.retiring || s === but) continue;
      if (!best || (best.slow !== undefined && s.slow === undefined) || ((s.slow === undefined) === (best.slow === undefined) && s.inFlight.size + s.load < best.inFlight.size + best.load)) best = s;
    }
    return best;
  }

  // --- packet reads (NOTE [ Packets ], src/read/packet.ts) -----------------------------------

  /**
   * Internal: the loader's packet reads (NOTE [ Packets ], src/read/packet.ts).
   * @ignore
   */
  read(plan: readonly string[], o: Parameters<PacketReader["read"]>[1], sink: PacketSink): PacketRead {
    const run = ++this.#runSeq;
    const r: Run = { batchSize: o.batchSize, strict: o.strict, epoch: o.epoch, sink, chunk: -1 };
    if (o.split) {
      let s = this.#splits.get(o.split.ids);
      if (!s) this.#splits.set(o.split.ids, (s = { id: this.#splits.size + 1, joined: o.split.ids.join("\n") }));
      r.split = s.id;
      r.order = o.split.order;
    } else r.ids = plan.join("\n");
    if (this.#lanes || this.#scaler) r.owner = new Int32Array(new SharedArrayBuffer(plan.length * 4));
    this.#runs.set(run, r);
    for (const s of this.#slots) if (!s.down) this.#sendPlan(s, run, r);
    return {
      request: (ranges) => this.#request(run, ranges),
      end: () => {
        if (!this.#runs.delete(run)) return;
        if (this.#runs.size === 0) clearInterval(this.#ticker), (this.#ticker = undefined);
        for (const s of this.#slots) {
          s.reads.delete(run);
          s.out.delete(run);
          s.load -= s.runLoad.get(run) ?? 0;
          s.runLoad.delete(run);
          if (s.retiring) this.#retireIfDone(s);
          if (!s.down && !this.#closed) s.worker.postMessage({ t: "end", run } satisfies ToWorker);
        }
      },
    };
  }

  #sendPlan(slot: Slot, run: number, r: Run): void {
    if (r.split !== undefined && !slot.splits.has(r.split)) {
      for (const s of this.#splits.values()) if (s.id === r.split) slot.worker.postMessage({ t: "split", split: s.id, ids: s.joined } satisfies ToWorker);
      slot.splits.add(r.split);
    }
    slot.worker.postMessage({ t: "plan", run, split: r.split, order: r.order, ids: r.ids, batchSize: r.batchSize, strict: r.strict, epoch: r.epoch, owner: r.owner } satisfies ToWorker);
  }

  /**
   * Each batch's part of `ranges` goes to one worker: the least loaded, or the one that holds
   * the batch's earlier part (a strict batch asked for in two requests stays one packet).
   */
  #request(run: number, ranges: readonly number[]): void {
    const r = this.#runs.get(run);
    if (!r || this.#closed) return;
    const B = r.batchSize;
    for (let k = 0; k < ranges.length; k += 2) {
      for (let from = ranges[k], to = ranges[k + 1]; from < to;) {
        const chunk = Math.floor(from / B);
        const end = Math.min(to, (chunk + 1) * B);
        const slot = chunk === r.chunk && r.slot && !r.slot.down && !r.slot.retiring && r.slot.slow === undefined ? r.slot : this.#leastLoaded();
        r.chunk = chunk;
        r.slot = slot;
        if (slot) this.#assign(slot, run, from, end);
        else this.#orphans.push([run, from, end]);
        from = end;
      }
    }
  }

  #assign(slot: Slot, run: number, from: number, to: number): void {
    const r = this.#runs.get(run);
    r?.owner?.fill(slot.code, from, to);
    if ((r?.owner || this.#scaler) && !this.#ticker && !this.#closed) {
      // Unref'd, while runs read: the lane's checks, and every SCALE_TICKS the scaler's period.
      this.#periodStart = runtime.now();
      this.#scaler?.restart();
      for (const s of this.#slots) s.busyTicks = 0;
      this.#ticks = 0;
      this.#ticker = setInterval(() => this.#tick(), LANE_CHECK_MS);
      (this.#ticker as { unref?: () => void }).unref?.();
    }
    const held = slot.reads.get(run);
    if (held) held.push(from, to);
    else slot.reads.set(run, [from, to]);
    const out = slot.out.get(run);
    if (out) out.push(from, to);
    else slot.out.set(run, [from, to]);
    addLoad(slot, run, to - from);
    this.#queueFlush();
  }

  #queueFlush(): void {
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      queueMicrotask(() => this.#flush());
    }
  }

  #packet(slot: Slot, wire: WirePacket): void {
    if (wire.run === 0) return this.#deliver(slot, wire as BatchPacket); // single fetches (a replaced worker's: already failed and retried)
    if (slot.down) return; // replaced: its runs asked again for what it held
    // NOTE [ Packet slabs ]: a slab crosses once; held here only while free, else by its packet.
    for (const id of wire.forget ?? []) slot.slabs.delete(id);
    const slab = wire.slab;
    if (slab !== undefined) {
      if (wire.buf) this.#slabsGone.register(wire.buf, { slot, id: slab });
      else wire.buf = slot.slabs.get(slab);
      slot.slabs.delete(slab);
      if (!wire.buf) throw new CassetteError("ERR_RUNTIME", `Cannot take a packet from read worker ${slot.index} as it names slab ${slab}, which this thread does not hold`);
    }
    const p = wire as BatchPacket;
    // A run that ended took its load away then (its late packets count for nothing).
    if (this.#runs.has(p.run)) {
      addLoad(slot, p.run, -(p.n + p.errors.length));
    }
    if (p.counts) slot.counts = p.counts;
    if (p.lane) slot.lane = p.lane;
    if (slot.retiring) queueMicrotask(() => this.#retireIfDone(slot));
    let released = false;
    p.release = () => {
      if (released || slot.down || this.#closed || !p.buf.byteLength) return;
      released = true;
      if (slab === undefined) slot.freed.push(p.buf);
      else slot.slabs.set(slab, p.buf), slot.freedSlabs.push(slab);
      this.#queueFlush(); // with the next batch's request, most often: one message for both
    };
    this.#runs.get(p.run)?.sink.packet(p);
  }

  #tick(): void {
    if (this.#lanes) this.#laneCheck();
    if (!this.#scaler) return;
    for (const s of this.#slots) if (s.load + s.inFlight.size > 0) s.busyTicks++;
    if (++this.#ticks % SCALE_TICKS === 0) this.#scale();
  }

  /** The consumer waited `waitMs` for a batch: the scaler's demand signal (NOTE [ Worker scaling ]). */
  demand(waitMs: number): void {
    this.#scaler?.demand(waitMs);
  }

  /**
   * NOTE [ Worker scaling ] for read workers: a worker is busy while it holds requests
   * unanswered (sampled every tick: reading or decoding, it has work; its thread's CPU time
   * would call a worker waiting for a core, or for its store, idle), and there is a backlog
   * when every serving worker held some at 90 % of the period's ticks or more. One more worker starts (asked the runs' plans as a
   * replacement is) and takes half of what the busiest holds and has not started; or the least
   * loaded one retires: it gets no requests, gives what it has not started to the others, and
   * stops once it holds nothing.
   */
  #scale(): void {
    const now = runtime.now(), periodMs = now - this.#periodStart;
    this.#periodStart = now;
    const serving = this.#slots.filter((s) => !s.down && !s.retiring && s.slow === undefined);
    let busyMs = 0, backlog = serving.length > 0;
    for (const s of serving) {
      busyMs += (s.busyTicks / SCALE_TICKS) * periodMs;
      // Work waited for the workers: each held requests nearly all the period (not at one tick:
      // an idle worker asked for a batch now and then holds one at some ticks).
      if (s.busyTicks < 0.9 * SCALE_TICKS) backlog = false;
    }
    for (const s of this.#slots) s.busyTicks = 0;
    this.resize(this.#scaler!.period({ workers: this.#target, serving: serving.length, busyMs, backlog, periodMs }));
    for (const s of this.#slots) if (s.retiring) this.#retireIfDone(s);
  }

  /**
   * Sets the number of workers (the scaler's answer, or a caller's): starts more, or retires the
   * least loaded ones (no more requests; what they hold and have not started goes to the others;
   * they stop once they hold nothing).
   */
  resize(n: number): void {
    if (this.#closed || !Number.isInteger(n) || n < 1) return;
    const from = this.#target;
    while (this.#target < n) {
      let index = this.#slots.findIndex((s) => s.retired);
      if (index < 0) index = this.#slots.length;
      if ((index + 1) * STATUS > this.#status.length) break; // too many still retiring: a later period
      this.#target++;
      const fresh = this.#spawn(index);
      // It takes half of what the busiest worker holds and has not started (with the lane's owners).
      let busiest: Slot | undefined;
      for (const s of this.#slots) if (s !== fresh && !s.down && !s.retiring && (!busiest || s.load > busiest.load)) busiest = s;
      // The later half: the busiest goes on with what it would do next while the new one starts.
      if (busiest && busiest.load > 1) this.#takeBack(busiest, fresh, Math.ceil(busiest.load / 2), Math.floor(busiest.load / 2));
    }
    while (this.#target > n) {
      let pick: Slot | undefined;
      for (const s of this.#slots) if (!s.down && !s.retiring && (!pick || s.load + s.inFlight.size < pick.load + pick.inFlight.size)) pick = s;
      if (!pick) break;
      this.#target--;
      pick.retiring = true;
      if (pick.slow === undefined) this.#takeBack(pick);
      this.#retireIfDone(pick);
    }
    if (this.#target !== from) this.#history.push([Math.round(runtime.now() - this.#base0), this.#target]);
  }

  /** A retiring worker that holds nothing more stops (its source closed first). */
  #retireIfDone(slot: Slot): void {
    if (!slot.retiring || slot.down || slot.load > 0 || slot.inFlight.size > 0) return;
    slot.down = slot.retired = true;
    slot.reads.clear();
    slot.out.clear();
    this.#keepCounts(slot);
    slot.worker.postMessage({ t: "close" } satisfies ToWorker);
    const timer = setTimeout(() => slot.worker.terminate(), 5000);
    slot.closed = () => (clearTimeout(timer), slot.worker.terminate());
  }

  /** NOTE [ Read workers: the slow lane ]: a worker past its deadline gives back what it has not started. */
  #laneCheck(): void {
    const now = performance.timeOrigin + performance.now() - this.#base;
    const st = this.#status;
    // Out of the lane first: a worker done with its slow sample can take another's queue.
    for (const slot of this.#slots) {
      if (slot.down || slot.slow === undefined) continue;
      const i = slot.index * STATUS;
      if (Atomics.load(st, i + ST_START) === 0 || Atomics.load(st, i + ST_SEQ) !== slot.slow) slot.slow = slot.queued = undefined;
    }
    for (const slot of this.#slots) {
      if (slot.down) continue;
      if (slot.slow === undefined) {
        const i = slot.index * STATUS;
        const start = Atomics.load(st, i + ST_START), deadline = Atomics.load(st, i + ST_DEADLINE) / 1000;
        if (start === 0 || deadline === 0 || slot.load === 0 || now - (start - 1) <= deadline) continue;
        // Only for a worker with nothing to do: moving a queue re-reads its samples, which a
        // busy worker would only take on top of its own (two CPU-bound workers passed their
        // queues to and fro on every collector pause, reading the epoch three times over).
        if (!this.#idleBesides(slot)) continue;
        slot.slow = Atomics.load(st, i + ST_SEQ);
        Atomics.store(st, i + ST_MOVED, slot.slow);
        this.#slowLane++;
        slot.queued = true;
      }
      if (!slot.queued) continue;
      // Half of what it holds unstarted at a time, and only while another worker has run dry
      // (work stealing's half): a worker that the machine's other work only paused keeps the
      // rest, and the two stay even (moving the whole queue passed it to and fro between two
      // starved workers, hundreds of times an epoch); one truly stuck is drained half by half
      // as the others come free.
      const left = this.#unstarted(slot);
      if (left === 0) slot.queued = false;
      else if (this.#idleBesides(slot)) this.#takeBack(slot, undefined, 0, Math.ceil(left / 2));
    }
  }

  /** Positions `slot` holds and has not started (its code still their owner). */
  #unstarted(slot: Slot): number {
    let n = 0;
    for (const [run, ranges] of slot.reads) {
      const owner = this.#runs.get(run)?.owner;
      if (!owner) continue;
      for (let k = 0; k < ranges.length; k += 2) for (let pos = ranges[k]; pos < ranges[k + 1]; pos++) if (owner[pos] === slot.code) n++;
    }
    return n;
  }

  /** Whether a worker other than `slot`, running and out of the lane, is between jobs with under a quarter of its queue. */
  #idleBesides(slot: Slot): boolean {
    const st = this.#status;
    return this.#slots.some((o) => o !== slot && !o.down && o.slow === undefined && Atomics.load(st, o.index * STATUS + ST_START) === 0 && 4 * o.load < slot.load);
  }

  /**
   * Asks other workers for the positions `slot` holds and has not started: swapped to their
   * code, a batch's part to one worker (or all to `only`, past the first `skip`, at most
   * `limit`). False when it stopped for want of a worker out of the lane (or at the limit).
   */
  #takeBack(slot: Slot, only?: Slot, skip = 0, limit = Infinity): boolean {
    let stop = false;
    for (const [run, ranges] of slot.reads) {
      const r = this.#runs.get(run);
      const owner = r?.owner;
      if (!owner || stop) continue;
      const B = r.batchSize;
      const kept: number[] = [];
      const moved: [Slot, number, number][] = [];
      for (let k = 0; k < ranges.length; k += 2) {
        let keptFrom = ranges[k];
        for (let pos = ranges[k]; pos < ranges[k + 1] && !stop; pos++) {
          if (owner[pos] !== slot.code) continue; // started (or answered) there: it stays
          if (skip > 0 && skip--) continue; // left to it (the first ones: a new worker takes the later)
          const last = moved.at(-1);
          const extend = last !== undefined && last[2] === pos && Math.floor(last[1] / B) === Math.floor(pos / B);
          const to = extend ? last[0] : only ?? this.#leastLoaded(slot);
          if (!to || to.slow !== undefined || limit-- <= 0) {
            stop = true; // nobody free to take them: the rest stays
            break;
          }
          if (Atomics.compareExchange(owner, pos, slot.code, to.code) !== slot.code) continue; // claimed just now
          if (keptFrom < pos) kept.push(keptFrom, pos);
          keptFrom = pos + 1;
          if (extend) last[2]++;
          else moved.push([to, pos, pos + 1]);
          to.load++; // counted as it goes, so the next batch's part goes to the next least loaded
        }
        if (keptFrom < ranges[k + 1]) kept.push(keptFrom, ranges[k + 1]);
      }
      slot.reads.set(run, kept);
      for (const [to, from, end] of moved) {
        addLoad(slot, run, -(end - from));
        to.load -= end - from; // counted as it went: #assign counts them
        this.#stolen += end - from;
        this.#assign(to, run, from, end);
      }
    }
    return !stop;
  }

  /** The slow lane's figures, in the decode pool's shape (`Loader.stats().prepare`): the workers' own (their last packets') and this thread's. */
  laneStats(): PoolStats | undefined {
    if (!this.#lanes && !this.#scaler) return undefined;
    let jobs = 0, thresholdMs = 0, percentile: 75 | 90 = 75;
    const jobMs = { p50: 0, p99: 0, max: 0 };
    for (const s of this.#slots) {
      const l = s.lane;
      if (!l) continue;
      jobs += l.jobs;
      thresholdMs = Math.max(thresholdMs, l.thresholdMs);
      if (l.percentile === 90) percentile = 90;
      jobMs.p50 = Math.max(jobMs.p50, l.jobMs.p50), jobMs.p99 = Math.max(jobMs.p99, l.jobMs.p99), jobMs.max = Math.max(jobMs.max, l.jobMs.max);
    }
    const n = this.#slots.filter((s) => !s.down && !s.retiring).length;
    return {
      workers: n, history: this.#history.slice(), jobs, slowLane: this.#slowLane, stolen: this.#stolen, thresholdMs: thresholdMs || Infinity, percentile, jobMs,
      periods: this.#scaler?.periods.slice() ?? [],
    };
  }

  /** A worker that stops: what it counted stays in the totals. */
  #keepCounts(slot: Slot): void {
    if (slot.counts) for (const k of Object.keys(this.#gone) as (keyof ReadCounts)[]) this.#gone[k] += slot.counts[k];
  }

  /** Packet reads: the epoch's tail re-asks (HedgeSource's urge) run in the workers; said once per change. */
  urge(on: boolean): void {
    if (on === this.#urged) return;
    this.#urged = on;
    for (const s of this.#slots) if (!s.down && !this.#closed) s.worker.postMessage({ t: "urge", on } satisfies ToWorker);
  }
  #urged = false;

  /**
   * Packet reads' retries and hedges, summed over the workers (and those gone; a worker lost
   * adds the samples it held and had not sent, asked again elsewhere, as retries).
   * @ignore
   */
  counts(): ReadCounts {
    const c = { ...this.#gone };
    for (const s of this.#slots) if (s.counts && !s.down) for (const k of Object.keys(c) as (keyof ReadCounts)[]) c[k] += s.counts[k];
    return c;
  }
  readonly #gone: ReadCounts = { retries: 0, hedged: 0, hedgeWins: 0, reasked: 0, reaskWins: 0, received: 0, gpuRefused: 0 };
  #receives = false;

  /** Whether the workers' sources count the bytes they receive (Source.received): `counts().received` means something. */
  get receives(): boolean {
    return this.#receives;
  }

  /** Sends each worker the requests of this turn in one message. */
  #flush(): void {
    this.#flushQueued = false;
    for (const s of this.#slots) {
      if (s.down) continue;
      if (s.out.size || s.freed.length || s.freedSlabs.length) {
        const runs: number[] = [], ranges: Int32Array[] = [];
        for (const [run, r] of s.out) runs.push(run), ranges.push(new Int32Array(r));
        s.worker.postMessage({ t: "read", runs, ranges, free: s.freed, ...(s.freedSlabs.length ? { slabs: s.freedSlabs } : {}) } satisfies ToWorker, s.freed);
        s.out.clear();
        s.freed = [];
        s.freedSlabs = [];
      }
      if (s.ids.length === 0) continue;
      const seqs = Int32Array.from(s.seqs);
      s.worker.postMessage({ t: "fetch", seqs, ids: s.ids.join("\n") } satisfies ToWorker, [seqs.buffer]);
      s.seqs = [];
      s.ids = [];
    }
  }

  /** Single fetches' answers: run 0, each entry's POS the request's sequence number. */
  #deliver(slot: Slot, p: BatchPacket): void {
    const pos = column(p, POS);
    for (let i = 0; i < p.n; i++) {
      const req = slot.inFlight.get(pos[i]);
      if (!req) continue; // its worker was replaced meanwhile: already failed and retried
      slot.inFlight.delete(pos[i]);
      this.#cap.release();
      req[1](null, sampleOf(p, i, req[0]));
    }
    for (const { pos: seq, error } of p.errors) {
      const req = slot.inFlight.get(seq);
      if (!req) continue;
      slot.inFlight.delete(seq);
      this.#cap.release();
      req[1](revive(error));
    }
  }

  /** Called when requests can be made again. */
  onDrain(listener: () => void): void {
    this.#cap.onDrain(listener);
  }
  /** Requests sent to the workers and not yet answered. */
  inFlight(): number {
    return this.#cap.inFlight;
  }

  /** Closes every worker's source (its connections), then stops the workers; unanswered requests fail. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#ticker);
    this.#runs.clear();
    await Promise.all(this.#slots.map(async (s) => {
      if (s.down) return; // already stopped, its requests failed
      // A worker that never opened, or hangs in close, is stopped anyway after a while.
      const closed = new Promise<void>((r) => (s.closed = r));
      s.worker.postMessage({ t: "close" } satisfies ToWorker);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([closed, new Promise<void>((r) => (timer = setTimeout(r, 5000)))]);
      clearTimeout(timer);
      s.worker.terminate();
      const err = new CassetteError("ERR_INVALID_OPTION", `Cannot finish reading as the source ${this.name} was closed`);
      for (const [, [, done]] of s.inFlight) done(err);
      s.inFlight.clear();
    }));
  }
}

/** `n` more (or fewer) positions of `run` held by `slot`. */
function addLoad(slot: Slot, run: number, n: number): void {
  slot.load += n;
  slot.runLoad.set(run, (slot.runLoad.get(run) ?? 0) + n);
}

function revive(e: SerializedError, prefix = ""): Error {
  const code = e.code?.startsWith("ERR_") ? (e.code as ErrorCode) : undefined;
  const err = code ? new CassetteError(code, prefix + e.message) : Object.assign(new Error(prefix + e.message), { name: e.name });
  // A decode error names its sample (decode_source.ts): its id says so to the epoch's error.
  if (e.name === "SampleDecodeError" && !prefix) Object.assign(err, { name: e.name, id: e.id });
  return Object.assign(err, { retryable: e.retryable });
}
