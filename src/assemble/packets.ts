/**
 * Ready and strict assembly (NOTE [ Ready-order assembly ], assembler.ts) over read workers'
 * packets (NOTE [ Packets ], src/read/packet.ts) instead of single samples. The workers do the
 * per-sample part: in ready order each fills a packet with the first samples answered, up to a
 * batch; in strict order each packet is one batch's positions (those asked of that worker), in
 * plan order. So a batch is normally one packet handed over as it came, with no copy:
 *
 *   ready:   [ packet 128 ] [ packet 128 ] … ─► batch = the next packet of a full batch;
 *            the epoch's last, partial packets (one per worker) are cut into batches by copying
 *   strict:  packets by batch k = pos / B ─► batch k once its B positions are in or skipped:
 *            one packet as it came, or (asked for in two requests) the packets merged in plan order
 *
 * The feeding thread's work per batch: a few views and the batch's ids from the plan.
 */
import type { Batch } from "./batch.ts";
import { packetBatch } from "./batch.ts";
import { mergePackets, type Packet, POS } from "../read/packet.ts";
import type { Taken } from "./assembler.ts";

export class PacketAssembler<T> {
  readonly #epoch: number;
  readonly #plan: readonly string[];
  readonly #B: number;
  readonly #strict: boolean;
  readonly #run: number;
  // ready order: packets in arrival order, the first one's entries from `#headAt` on not yet handed over
  #queue: Packet[] = [];
  #headAt = 0;
  #queued = 0;
  #skippedHeld = 0;
  // strict order: packets and arrivals per batch index
  readonly #byBatch = new Map<number, Packet[]>();
  readonly #in: Uint32Array; // positions of batch k arrived or skipped
  #batchIndex = 0;

  constructor(epoch: number, plan: readonly string[], batchSize: number, strict: boolean, run: number) {
    this.#epoch = epoch;
    this.#plan = plan;
    this.#B = batchSize;
    this.#strict = strict;
    this.#run = run;
    this.#in = new Uint32Array(strict ? Math.ceil(plan.length / batchSize) : 0);
  }

  /** A packet whose entries were all delivered for the first time (the run filtered duplicates out). */
  add(p: Packet): void {
    if (p.n === 0) return;
    if (!this.#strict) {
      this.#queue.push(p);
      this.#queued += p.n;
      return;
    }
    // A worker's strict packet holds positions of one batch; a merged one may hold several.
    const B = this.#B, n = p.n, pos = p.cols;
    const k = Math.floor(pos[POS * n] / B);
    if (Math.floor(pos[POS * n + n - 1] / B) === k) return this.#file(k, p, n);
    let start = 0;
    for (let i = 1; i <= n; i++) {
      if (i === n || Math.floor(pos[POS * n + i] / B) !== Math.floor(pos[POS * n + start] / B)) {
        const idx = Array.from({ length: i - start }, (_, j) => start + j);
        this.#file(Math.floor(pos[POS * n + start] / B), mergePackets(this.#run, [[p, idx]]), i - start);
        start = i;
      }
    }
    p.release?.(); // copied out: its buffer can be filled again
  }

  #file(k: number, p: Packet, n: number): void {
    const list = this.#byBatch.get(k);
    if (list) list.push(p);
    else this.#byBatch.set(k, [p]);
    this.#in[k] += n;
  }

  /** Plan position `pos` was given up on. */
  skip(pos: number): void {
    if (this.#strict) this.#in[Math.floor(pos / this.#B)]++;
    else this.#skippedHeld++;
  }

  /** The next batch if one is ready; `allIn`: nothing more will arrive this epoch. */
  take(allIn: boolean): Taken<T> {
    return this.#strict ? this.#takeStrict() : this.#takeReady(allIn);
  }

  #takeReady(allIn: boolean): Taken<T> {
    const B = this.#B;
    if (this.#queued < B && !(allIn && this.#queued > 0)) {
      const freed = allIn ? this.#skippedHeld : 0;
      if (allIn) this.#skippedHeld = 0;
      return { freed };
    }
    const head = this.#queue[0];
    let p: Packet;
    if (this.#headAt === 0 && (head.n === B || (head.n < B && this.#queued === head.n))) {
      p = head; // the usual case: a worker's full packet, or the last one alone
      this.#queue.shift();
    } else {
      // Cut across packets: the first B entries (or all that are left).
      const parts: [Packet, number[]][] = [];
      let want = Math.min(B, this.#queued);
      while (want > 0) {
        const q = this.#queue[0];
        const take = Math.min(want, q.n - this.#headAt);
        parts.push([q, Array.from({ length: take }, (_, j) => this.#headAt + j)]);
        want -= take;
        this.#headAt += take;
        if (this.#headAt === q.n) this.#queue.shift(), (this.#headAt = 0);
      }
      p = mergePackets(this.#run, parts);
      // Those wholly copied can be filled again (the head may still hold entries for the next batch).
      for (const [q] of parts) if (q !== this.#queue[0]) q.release?.();
    }
    this.#queued -= p.n;
    const freed = p.n + this.#skippedHeld;
    this.#skippedHeld = 0;
    return { batch: packetBatch<T>(this.#epoch, this.#batchIndex++, this.#plan, p), freed };
  }

  #takeStrict(): Taken<T> {
    let freed = 0;
    for (;;) {
      const k = this.#batchIndex;
      const start = k * this.#B;
      if (start >= this.#plan.length) return { freed };
      const size = Math.min(this.#B, this.#plan.length - start);
      if (this.#in[k] < size) return { freed };
      const list = this.#byBatch.get(k) ?? [];
      this.#byBatch.delete(k);
      this.#batchIndex++;
      freed += size;
      if (list.length === 0) continue; // every sample of it skipped: hand over nothing, move on
      let p = list[0];
      if (list.length > 1) {
        // Asked for in more than one request: the entries in plan order, copied into one packet.
        const all: [Packet, number][] = list.flatMap((q) => Array.from({ length: q.n }, (_, i) => [q, i] as [Packet, number]));
        all.sort((a, b) => a[0].cols[a[1]] - b[0].cols[b[1]]);
        p = mergePackets(this.#run, all.map(([q, i]) => [q, [i]] as const));
        for (const q of list) q.release?.();
      }
      return { batch: packetBatch<T>(this.#epoch, k, this.#plan, p), freed };
    }
  }
}
