/**
 * WebDataset shards as a Source: `wds:INDEX` names a wids shard index (PREFIX.index.json, as
 * `cassette export --format webdataset` writes it) in a folder, over http(s):// or in an
 * s3:// bucket (with that address's options); its shards are tar files beside it (URLs relative
 * to the index). The index is read once, at open.
 *
 * Ids: an index whose shards list their `keys` (cassette's export does) gives each sample the
 * id its key is (the store's UUID), so every id and its shard are known without reading a
 * shard. A foreign index (url and nsamples only) gives the i-th sample of a shard the id
 * `URL#i`, URL as the index lists it. A sample's label is its `.cls` (…, webdataset.ts's
 * `sampleLabel`), its bytes its image entry's (`sampleImage`); a sample webdataset would refuse
 * (no image, two of them, no label, a repeated entry) is a named error for that id, not retried.
 *
 * Samples are ready as a shard is parsed, not when it has arrived whole:
 *
 *   fetch(id) ─► its shard's stream open? ── no ──► GET the shard (its planned part, or from 0)
 *                      │ yes                                │ chunks
 *                      ▼                                    ▼
 *                 wait for it ◄──── a parsed sample ◄── TarReader ─► SampleGrouper
 *                                        │ nobody asked yet
 *                                        ▼
 *                   early samples (≤ maxEarlyBytes) ── full ─► the stream pauses (backpressure)
 *
 * Each shard is read once per epoch in the normal case: the Loader plans shard by shard
 * (plan/epoch.ts `groups`, from `shards()`), so a shard's samples are asked for while it
 * streams. The Loader also says which ids an epoch asks for (`plan`): a shard's stream starts
 * at the first of them and ends after the last, where the index lists the samples' `offsets`
 * (cassette's export does), so ranks that share a shard (`rankShards`) each stream their part. The early map is bounded in bytes: when it is full the stream stops pulling (its
 * connection's window closes), unless someone waits for a sample further on in that stream,
 * in which case the oldest early samples are dropped to make room (`evicted`): a later fetch
 * of one reads that sample alone, its bytes only, with a Range request. So memory stays
 * bounded and no fetch waits for ever, whatever order the ids come in (several ranks each
 * streaming every shard, ids asked twice by a hedge).
 *
 * A broken stream (a reset connection, a 5xx or a timeout on the way) is resumed with
 * `Range: bytes=N-`, N the offset where the first sample not yet handed on begins (the end of
 * the previous sample's last entry), after a backoff, up to `retries` times without progress:
 * samples already answered are not parsed again and none is skipped, so each fetch is answered
 * once. Errors name the shard's URL and the offset.
 *
 * @example
 * ```ts
 * import { openWebDatasetSource } from "./webdataset_source.ts";
 * try {
 *   await openWebDatasetSource("/nonexistent/fm.index.json");
 * } catch (e) {
 *   console.log((e as { code: string }).code); // ERR_STORE
 * }
 * ```
 */
import { CassetteError } from "../../errors.ts";
import { BLOCK, TarError, TarReader } from "../../dataset/tar.ts";
import { type IndexedShard, parseShardIndex, SampleGrouper, sampleImage, sampleLabel, type WdsSample } from "../../dataset/webdataset.ts";
import type { HttpSourceOptions } from "../http/http.ts";
import { isRetryable, storeError } from "../retryable.ts";
import type { S3Options } from "../http/s3.ts";
// Where the shards are: a folder, HTTP or S3 (objects.ts); a page's bundle puts objects.browser.ts in its place.
import { describe, type Objects, openObjects } from "./objects.ts";
import { Capacity, type FetchCallback, type Fetched, type Source } from "../source.ts";

const MiB = 1 << 20;

/** How a `wds:` source reads WebDataset shards: the dataset expected, memory for samples parsed early, requests in flight, resumes, size limits, and HTTP or S3 options. */
export interface WebDatasetSourceOptions {
  /** The dataset expected: checked against the name cassette's export gives the index, when it has one. */
  dataset?: string;
  /**
   * Bytes of samples parsed before anyone asked for them that are kept (default 64 MiB): past
   * it a stream pauses, or drops the oldest when a fetch waits further on (see the file's doc).
   */
  maxEarlyBytes?: number;
  /** Requests in flight before `fetch` answers false (default 4096: a fetch costs no connection). */
  maxInFlight?: number;
  /** Resumes of a broken shard stream without a sample between them (default 3), after 50 ms, doubled up to 2 s. */
  retries?: number;
  /** The largest tar entry (default 256 MiB), and the largest index (64 MiB). */
  maxEntryBytes?: number;
  /** For an http(s):// index: connections (one per shard streamed), timeouts, CA… */
  http?: HttpSourceOptions;
  /** For an s3:// index: endpoint, region, credentials, and the HTTP options. */
  s3?: S3Options;
}

/** Figures of the shard streams, for tests and statistics. */
export interface WebDatasetStats {
  /** Shard streams started from their first byte. */
  opened: number;
  /** Streams resumed with a Range request after a failure. */
  resumed: number;
  /** Single samples read again from their offset (dropped from the early map, or asked twice). */
  picked: number;
  /** Early samples dropped to let a waited-for stream go on. */
  evicted: number;
  /** Bytes received from shards. */
  bytes: number;
  /** Bytes in the early map now, and the most it has held. */
  earlyBytes: number;
  maxEarlyBytes: number;
}

interface Shard {
  url: string;
  at: string;
  shown: string;
  /** Ids in stream order. */
  ids: string[];
  /** Key → position, for an index with keys. */
  pos?: Map<string, number>;
  /** Where each sample begins (the end of the previous sample's last entry), once parsed. */
  offsets: number[];
  streams: Set<Stream>;
  /** Where its bytes stopped being a tar (the same bytes fail the same way): samples from `next` on are that error. */
  broken?: { next: number; error: Error };
}

interface Stream {
  shard: Shard;
  /** Position of the next sample to hand on, and where it begins (a resume's Range). */
  next: number;
  resumeAt: number;
  /** A single sample's read: stop after this position, and the last byte to ask for when known. */
  until?: number;
  end?: number;
  /** A part of the shard the epoch needs (its plan): stop after this position, keeping the samples before it that arrive early. */
  last?: number;
  closed: boolean;
  attempts: number;
  wake?: () => void;
  abort: AbortController;
}

type Answer = { sample: Fetched; error?: undefined } | { error: Error; sample?: undefined };

/** Opens the shard set whose index is at `index` (a path, an http(s):// URL or an s3:// address); reads the index. */
export async function openWebDatasetSource(index: string, o: WebDatasetSourceOptions = {}): Promise<WebDatasetSource> {
  const positive = (v: number, name: string) => {
    if (!Number.isSafeInteger(v) || v < 1) throw new CassetteError("ERR_INVALID_OPTION", `Cannot open wds:${index.replace(/\?.*$/, "")} as '${name}' must be a positive integer: current value is ${v}`);
    return v;
  };
  positive(o.maxEarlyBytes ?? 64 * MiB, "maxEarlyBytes");
  positive(o.maxInFlight ?? 4096, "maxInFlight");
  positive(o.maxEntryBytes ?? 256 * MiB, "maxEntryBytes");
  if (o.retries !== undefined && !(Number.isInteger(o.retries) && o.retries >= 0)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot open wds:${index.replace(/\?.*$/, "")} as 'retries' must be an integer ≥ 0: current value is ${o.retries}`);
  }
  const objects = await openObjects(index, o.http ?? {}, o.s3 ?? {});
  try {
    const where = objects.where;
    const text = new TextDecoder().decode(await objects.index());
    const parsed = parseShardIndex(text, where);
    const dataset = /^(.*) \(seed -?\d+\)$/.exec(parsed.name ?? "")?.[1];
    if (o.dataset !== undefined && dataset !== undefined && dataset !== o.dataset) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot open ${where} as dataset '${o.dataset}' as it holds dataset '${dataset}'`);
    }
    return new WebDatasetSource(where, o.dataset ?? dataset, parsed.shards, objects, o);
  } catch (e) {
    await objects.close().catch(() => {});
    throw e;
  }
}

export class WebDatasetSource implements Source {
  readonly name: string;
  readonly dataset?: string;
  readonly #objects: Objects;
  readonly #shards: Shard[];
  readonly #byId = new Map<string, { shard: Shard; j: number }>();
  readonly #cap: Capacity;
  readonly #maxEarly: number;
  readonly #retries: number;
  readonly #maxEntry: number;
  /** Fetches waiting for a sample, by id (a hedge may ask twice). */
  readonly #pending = new Map<string, FetchCallback[]>();
  /** Samples parsed before anyone asked, oldest first. */
  readonly #early = new Map<string, { answer: Answer; bytes: number }>();
  /** Ids dropped from the early map and not asked for since: a fetch reads them alone. */
  readonly #evicted = new Set<string>();
  readonly #stats: WebDatasetStats = { opened: 0, resumed: 0, picked: 0, evicted: 0, bytes: 0, earlyBytes: 0, maxEarlyBytes: 0 };
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  /** Each announced epoch's part of each shard (plan): first and last position asked for. */
  readonly #parts = new Map<number, Map<Shard, [number, number]>>();
  #closed = false;

  /** @internal Use openWebDatasetSource. */
  constructor(where: string, dataset: string | undefined, shards: IndexedShard[], objects: Objects, o: WebDatasetSourceOptions) {
    this.name = dataset ? `${where} (${dataset})` : where;
    if (dataset !== undefined) this.dataset = dataset;
    this.#objects = objects;
    this.#cap = new Capacity(o.maxInFlight ?? 4096);
    this.#maxEarly = o.maxEarlyBytes ?? 64 * MiB;
    this.#retries = o.retries ?? 3;
    this.#maxEntry = o.maxEntryBytes ?? 256 * MiB;
    this.#shards = shards.map((s) => {
      const { at, shown } = objects.locate(s.url);
      const ids = s.keys ?? Array.from({ length: s.nsamples }, (_, i) => `${s.url}#${i}`);
      const shard: Shard = { url: s.url, at, shown, ids, offsets: s.offsets ? [...s.offsets] : [0], streams: new Set() };
      if (s.keys) shard.pos = new Map(s.keys.map((k, i) => [k, i]));
      ids.forEach((id, j) => {
        if (this.#byId.has(id)) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot read shard index ${where} as sample '${id}' is listed twice (${this.#byId.get(id)!.shard.url} and ${s.url})`);
        this.#byId.set(id, { shard, j });
      });
      return shard;
    });
  }

  /** Every sample id the index lists, shard by shard. */
  ids(): string[] {
    return this.#shards.flatMap((s) => s.ids);
  }

  /** The ids of each shard, in stream order: what the Loader plans by (plan/epoch.ts `groups`). */
  shards(): string[][] {
    return this.#shards.map((s) => s.ids.slice());
  }

  stats(): WebDatasetStats {
    return { ...this.#stats };
  }

  /** Bytes received from shards (`stats().bytes`): the Loader's `stats().received`. */
  received(): number {
    return this.#stats.bytes;
  }

  fetch(id: string, done: FetchCallback): boolean {
    const more = this.#cap.take();
    const answer = (a: Answer) => {
      this.#cap.release();
      if (a.error) done(a.error);
      else done(null, a.sample);
    };
    const at = this.#byId.get(id);
    if (this.#closed || !at) {
      const error = this.#closed
        ? storeError("ERR_STORE", `Cannot get sample ${id} from ${this.name} as the source is closed`, false)
        : storeError("ERR_STORE", `Cannot find sample ${id} in ${this.name}: no shard of its index lists it`, false);
      queueMicrotask(() => answer({ error }));
      return more;
    }
    const early = this.#early.get(id);
    if (early) {
      this.#early.delete(id);
      this.#stats.earlyBytes -= early.bytes;
      queueMicrotask(() => answer(early.answer));
      this.#wakeAll();
      return more;
    }
    const { shard, j } = at;
    if (shard.broken && j >= shard.broken.next && !this.#evicted.has(id)) {
      const { error } = shard.broken;
      queueMicrotask(() => answer({ error }));
      return more;
    }
    const waiting = this.#pending.get(id);
    const cb: FetchCallback = (err, s) => answer(err ? { error: err } : { sample: s! });
    if (waiting) waiting.push(cb);
    else this.#pending.set(id, [cb]);
    const live = [...shard.streams].find((s) => covers(s, j));
    const dropped = this.#evicted.delete(id);
    if (live) live.wake?.(); // paused: it finds a waiter and makes room
    else if (dropped || [...shard.streams].some((s) => !s.closed && s.until === undefined)) {
      // Dropped from the early map, or passed by the shard's stream (asked again): read it alone.
      this.#stats.picked++;
      const known = shard.offsets[j], after = shard.offsets[j + 1];
      this.#start(shard, known === undefined ? 0 : j, known ?? 0, j, known !== undefined && after !== undefined ? after - 1 : undefined);
    } else {
      this.#stats.opened++;
      this.#open(shard, j);
    }
    return more;
  }

  /**
   * The epochs' plans (Source.plan): for each shard, the first and last position an epoch asks
   * for. A shard's stream then starts at the first (where the index or an earlier stream says
   * it begins) and ends after the last, so ranks that share a shard each stream their part.
   */
  plan(epoch: number, ids: readonly string[]): void {
    const parts = new Map<Shard, [number, number]>();
    for (const id of ids) {
      const at = this.#byId.get(id);
      if (!at) continue;
      const r = parts.get(at.shard);
      if (!r) parts.set(at.shard, [at.j, at.j]);
      else r[0] = Math.min(r[0], at.j), r[1] = Math.max(r[1], at.j);
    }
    this.#parts.set(epoch, parts);
    // The epochs a Loader reads at once: this one and the next (read ahead), one more in hand.
    for (const e of this.#parts.keys()) if (this.#parts.size > 3 && e !== epoch) this.#parts.delete(e);
  }

  /** A stream for sample j's shard: its part of an announced epoch (the earliest that holds j), else the whole shard. */
  #open(shard: Shard, j: number): void {
    let part: [number, number] | undefined;
    for (const e of [...this.#parts.keys()].sort((a, b) => a - b)) {
      const r = this.#parts.get(e)!.get(shard);
      if (r && r[0] <= j && j <= r[1]) {
        part = r;
        break;
      }
    }
    const from = part && shard.offsets[part[0]] !== undefined ? part[0] : 0;
    const last = part?.[1], after = last === undefined ? undefined : shard.offsets[last + 1];
    this.#start(shard, from, shard.offsets[from], undefined, after === undefined ? undefined : after - 1, last);
  }

  onDrain(listener: () => void): void {
    this.#cap.onDrain(listener);
  }

  inFlight(): number {
    return this.#cap.inFlight;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    for (const shard of this.#shards) for (const s of shard.streams) this.#stop(s);
    const error = storeError("ERR_STORE", `Cannot get a sample from ${this.name} as the source was closed`, false);
    for (const [, cbs] of this.#pending) for (const cb of cbs) cb(error);
    this.#pending.clear();
    this.#early.clear();
    this.#stats.earlyBytes = 0;
    await this.#objects.close();
  }

  #start(shard: Shard, next: number, offset: number, until?: number, end?: number, last?: number): void {
    const s: Stream = { shard, next, resumeAt: offset, closed: false, attempts: 0, abort: new AbortController() };
    if (until !== undefined) s.until = until;
    if (end !== undefined) s.end = end;
    if (last !== undefined) s.last = last;
    shard.streams.add(s);
    this.#run(s).catch((e) => this.#fail(s, e instanceof Error ? e : new Error(String(e))));
  }

  #stop(s: Stream): void {
    if (s.closed) return;
    s.closed = true;
    s.shard.streams.delete(s);
    s.abort.abort();
    s.wake?.();
  }

  /** Reads `s` to its end, resuming after retryable failures (see the file's doc). */
  async #run(s: Stream): Promise<void> {
    const shard = s.shard;
    while (!s.closed) {
      const base = s.resumeAt;
      const reader = new TarReader({ shard: shard.shown, maxEntryBytes: this.#maxEntry });
      const grouper = new SampleGrouper();
      /** Where the sample being grouped begins, and where the entry after the last one read would. */
      let begins = base, end = base;
      try {
        const body = await this.#objects.stream(shard.at, shard.shown, base, s.abort.signal, s.end);
        for await (const chunk of body) {
          if (s.closed) return;
          this.#stats.bytes += chunk.length;
          for (const e of reader.push(chunk)) {
            const from = end;
            end = base + e.dataOffset + Math.ceil(e.size / BLOCK) * BLOCK;
            const done = grouper.push({ ...e, offset: base + e.offset, dataOffset: base + e.dataOffset });
            if (!done) continue;
            const start = begins;
            begins = from;
            await this.#deliver(s, done, start, from);
            if (s.closed) return;
          }
        }
        if (s.closed) return;
        reader.end();
        const last = grouper.end();
        if (last) await this.#deliver(s, last, begins, end);
        this.#finish(s, end);
        return;
      } catch (e) {
        if (s.closed) return;
        if (e instanceof TarError) {
          // The sample being grouped has its entries whole: kept, as what precedes a break always is.
          const held = grouper.end();
          if (held) await this.#deliver(s, held, begins, end);
          if (s.closed) return;
          const error = storeError(e.code, `Cannot read tar shard ${shard.shown} as ${e.reason} (offset ${base + e.offset})`, false, { cause: e });
          if (!shard.broken || s.next < shard.broken.next) shard.broken = { next: s.next, error };
          return this.#fail(s, error);
        }
        const err = e as Error & { code?: string };
        const named = err instanceof CassetteError ? err : storeError("ERR_STORE_UNREACHABLE", `Cannot read shard ${shard.shown} at offset ${base + reader.offset}: ${describe(err)}`, true, { cause: err });
        if (!isRetryable(named) || s.attempts >= this.#retries || this.#closed) return this.#fail(s, named);
        // Resumed where the first sample not yet handed on begins: none twice, none lost.
        s.attempts++;
        this.#stats.resumed++;
        const delay = Math.min(2000, 50 * 2 ** (s.attempts - 1)) * (0.5 + Math.random() / 2);
        await new Promise<void>((r) => {
          const t = setTimeout(() => (this.#timers.delete(t), r()), delay);
          this.#timers.add(t);
          s.wake = () => (clearTimeout(t), this.#timers.delete(t), r());
        });
        s.wake = undefined;
      }
    }
  }

  /** A sample of `s`'s shard was parsed: answer its fetches, or keep it early; then keep the early map in bounds. */
  async #deliver(s: Stream, w: WdsSample, start: number, resumeAt: number): Promise<void> {
    const shard = s.shard;
    const j = shard.pos ? shard.pos.get(w.key) : s.next;
    s.resumeAt = resumeAt;
    s.attempts = 0; // progress: a later failure starts its retries afresh
    if (j === undefined) return; // a sample the index does not list: nobody can ask for it
    shard.offsets[j] = start;
    const id = shard.ids[j];
    const answer = this.#answerOf(shard, id, w, start);
    // s.next moves past j once the sample is handed on or kept: a fetch of it while this
    // stream waits for room finds the stream, and wakes it, rather than reading it again.
    s.next = Math.max(s.next, j);
    if (this.#answerWaiting(id, answer)) return this.#passed(s, j);
    if (s.until === undefined && !this.#early.has(id)) {
      const bytes = answer.sample ? answer.sample.data.length : 256;
      // Room first: a full map pauses this stream, or, when someone waits further on in it,
      // loses its oldest sample rather than stall. A sample alone over the bound still goes in.
      while (!s.closed && this.#stats.earlyBytes > 0 && this.#stats.earlyBytes + bytes > this.#maxEarly && !this.#pending.has(id)) {
        if (this.#waited(s)) {
          const [oldest, e] = this.#early.entries().next().value!;
          this.#early.delete(oldest);
          this.#evicted.add(oldest);
          this.#stats.earlyBytes -= e.bytes;
          this.#stats.evicted++;
          continue;
        }
        await new Promise<void>((r) => (s.wake = r));
        s.wake = undefined;
      }
      if (s.closed) return;
      if (!this.#answerWaiting(id, answer)) { // else asked for while the stream waited
        this.#early.set(id, { answer, bytes });
        this.#stats.earlyBytes += bytes;
        this.#stats.maxEarlyBytes = Math.max(this.#stats.maxEarlyBytes, this.#stats.earlyBytes);
      }
    }
    this.#passed(s, j);
  }

  /** `s` has handed on sample j; a single sample's read ends with it. */
  #passed(s: Stream, j: number): void {
    s.next = Math.max(s.next, j + 1);
    if (j >= (s.until ?? s.last ?? Infinity)) this.#stop(s);
  }

  /** Answers the fetches waiting for `id`, if any (each its own copy of the bytes, when a hedge asked twice). */
  #answerWaiting(id: string, answer: Answer): boolean {
    const cbs = this.#pending.get(id);
    if (!cbs) return false;
    this.#pending.delete(id);
    for (const cb of cbs) {
      if (answer.error) cb(answer.error);
      else cb(null, { ...answer.sample, data: cbs.length > 1 ? answer.sample.data.slice() : answer.sample.data });
    }
    return true;
  }

  /** Whether a fetch waits for a sample that `s` has still to parse. */
  #waited(s: Stream): boolean {
    for (const id of this.#pending.keys()) {
      const at = this.#byId.get(id)!;
      if (at.shard === s.shard && covers(s, at.j)) return true;
    }
    return false;
  }

  #wakeAll(): void {
    for (const shard of this.#shards) for (const s of shard.streams) s.wake?.();
  }

  #answerOf(shard: Shard, id: string, w: WdsSample, start: number): Answer {
    const bad = (why: string): Answer => ({
      error: storeError("ERR_MALFORMED_INPUT", `Cannot read sample '${w.key}'${w.key === id ? "" : ` (id ${id})`} of shard ${shard.shown} (offset ${start}) as ${why}`, false),
    });
    if (w.problems.length) return bad(w.problems.join("; "));
    const image = sampleImage(w);
    if ("reason" in image) return bad(image.reason);
    const label = sampleLabel(w);
    if ("reason" in label) return bad(label.reason);
    return { sample: { id, label: label.label, data: image.entry.data } };
  }

  /** The stream ended at `end`: fetches that waited on it for a sample it did not hold are told so. */
  #finish(s: Stream, end: number): void {
    this.#stop(s);
    this.#failWaiters(s, (id) => storeError("ERR_STORE", `Cannot find sample ${id} in shard ${s.shard.shown}: the shard ended at offset ${end} without it`, false));
  }

  #fail(s: Stream, err: Error): void {
    this.#stop(s);
    this.#failWaiters(s, () => err);
  }

  /** Answers with an error each fetch waiting on `s` that no other stream of the shard will serve. */
  #failWaiters(s: Stream, error: (id: string) => Error): void {
    for (const [id, cbs] of [...this.#pending]) {
      const at = this.#byId.get(id)!;
      if (at.shard !== s.shard || at.j < s.next || at.j > (s.until ?? s.last ?? Infinity)) continue;
      if ([...s.shard.streams].some((o) => covers(o, at.j))) continue;
      this.#pending.delete(id);
      const e = error(id);
      for (const cb of cbs) cb(e);
    }
  }
}

/** Whether stream `s` is open and will still hand on position j (it has not passed it, and does not stop before it). */
function covers(s: Stream, j: number): boolean {
  return !s.closed && s.next <= j && j <= (s.until ?? s.last ?? Infinity);
}
