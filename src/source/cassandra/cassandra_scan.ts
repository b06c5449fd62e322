/**
 * NOTE [ Ranged scan ]
 *
 * A whole-table `SELECT` pages through the token ring in order, one page per round trip: at
 * 150 ms, metadata_by_nat's 70 000 rows (15 pages of 5000) took ~3 s. Here the ring is cut into
 * `concurrency` ranges of equal width, `token(pk) > a AND token(pk) <= b`, all asked at once,
 * and their pages are yielded range after range in ring order. Murmur3 spreads partitions
 * evenly over the ring, and a full scan returns partitions in token order and a partition's
 * rows in clustering order; a range never splits a token, so the ranges' rows concatenated in
 * ring order are exactly the full scan's sequence. Splits and shuffles are seeded from that
 * order (src/dataset/splits.ts), so it must not change.
 *
 *        -2^63 ┌────────┬────────┬─ … ─┬────────┐ 2^63-1
 *   range        0        1              n-1
 *   query     ≤ b1    (b1, b2]        > b(n-1)      yielded 0, 1, …, n-1; each range's pages in order
 *
 * The first range has no lower bound and the last no upper one: no key has the minimum token
 * (Murmur3Partitioner maps a hash of -2^63 to 2^63-1), and the last range must include 2^63-1.
 *
 * Memory: a range holds at most `ahead` pages not yet yielded and then waits, so at most
 * concurrency × ahead pages are held. Pages within a range still come one round trip apart:
 * a table of more than about concurrency × ahead pages scans its later pages at the pace of
 * the range being yielded.
 */

/** A range of the token ring, (after, upTo]; a bound left out is the ring's edge. */
export interface TokenRange {
  after?: bigint;
  upTo?: bigint;
}

const MIN_TOKEN = -(2n ** 63n);
const RING = 2n ** 64n;

/** The Murmur3 ring cut into `n` ranges of equal width, in ring order. */
export function ringRanges(n: number): TokenRange[] {
  const bound = (k: number) => MIN_TOKEN + (RING * BigInt(k)) / BigInt(n);
  return Array.from({ length: n }, (_, i) => ({
    ...(i > 0 ? { after: bound(i) } : {}),
    ...(i < n - 1 ? { upTo: bound(i + 1) } : {}),
  }));
}

/** The WHERE clause (with its leading space) that keeps `range` of a table partitioned by `partitionKey`; "" for the whole ring. */
export function tokenWhere(partitionKey: readonly string[], range: TokenRange): string {
  const token = `token(${partitionKey.join(", ")})`;
  const terms = [
    ...(range.after !== undefined ? [`${token} > ${range.after}`] : []),
    ...(range.upTo !== undefined ? [`${token} <= ${range.upTo}`] : []),
  ];
  return terms.length ? ` WHERE ${terms.join(" AND ")}` : "";
}

/** One page of range `range`: its rows, and the driver's page state when more follow. */
export type FetchPage<T> = (range: number, pageState: string | undefined) => Promise<{ rows: T[]; pageState?: string }>;

/**
 * The pages of `ranges` ranges, fetched up to `concurrency` ranges at a time and at most `ahead`
 * pages ahead in each, yielded in range order (NOTE [ Ranged scan ]). Empty pages are skipped;
 * a scan that finds nothing yields one empty page, as a full scan does. The first failure is
 * thrown at the next page the caller asks for; a caller that stops early stops the fetching.
 */
export async function* pagesInOrder<T>(ranges: number, concurrency: number, ahead: number, fetch: FetchPage<T>): AsyncGenerator<T[]> {
  interface Lane {
    pages: T[][];
    done: boolean;
    /** Resumes the fetching once a page is taken. */
    resume?: () => void;
  }
  const lanes: Lane[] = [];
  let stopped = false;
  let failure: { error: unknown } | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const run = async (i: number, lane: Lane) => {
    let state: string | undefined;
    try {
      do {
        while (lane.pages.length >= ahead && !stopped) await new Promise<void>((r) => (lane.resume = r));
        if (stopped) return;
        const page = await fetch(i, state);
        lane.pages.push(page.rows);
        state = page.pageState;
        notify();
      } while (state && !stopped);
    } catch (error) {
      failure ??= { error };
    } finally {
      lane.done = true;
      notify();
    }
  };
  const start = (i: number) => {
    if (i >= ranges) return;
    const lane: Lane = { pages: [], done: false };
    lanes[i] = lane;
    void run(i, lane);
  };
  let yielded = false;
  try {
    for (let i = 0; i < Math.min(concurrency, ranges); i++) start(i);
    for (let i = 0; i < ranges; i++) {
      const lane = lanes[i];
      for (;;) {
        if (failure) throw failure.error;
        const page = lane.pages.shift();
        if (page) {
          const r = lane.resume;
          lane.resume = undefined;
          r?.();
          if (page.length) {
            yielded = true;
            yield page;
          }
          continue;
        }
        if (lane.done) break;
        await new Promise<void>((r) => (wake = r));
      }
      start(i + concurrency);
    }
    if (!yielded) yield [];
  } finally {
    stopped = true;
    for (const lane of lanes) lane?.resume?.();
  }
}
