/**
 * Which connection (lane) a request goes out on: the one where it should finish first.
 *
 * NOTE [ Connection choice ]: cassandra-driver 4.10 picks a connection for each request in
 * HostConnectionPool.minInFlight (lib/host-connection-pool.js): of two round-robin neighbours,
 * the one with fewer requests in flight. In-flight counts alone cannot tell a congested
 * connection from a healthy one: a connection at 1 MB/s among three fast ones keeps about a
 * quarter of the requests, which then wait in its queue for seconds. In ready order that costs
 * window slots (the samples stuck there are outstanding); in strict order every batch with a
 * sample on it waits. "Hiding Latencies…" (arXiv:2503.22643), §3.4, saw such connections on real
 * internet routes.
 *
 * RateChooser picks the lane with the least expected completion time, (inFlight + 1) / rate,
 * where rate is the lane's completions per ms: an exponential average over intervals of ≥ 50 ms
 * in which it had work. So each lane holds requests in proportion to what it delivers: a
 * congested lane's in-flight count is capped by its own rate instead of a fair share of the
 * window. Completions are counted as requests this chooser sent minus the lane's in-flight
 * count, so the driver needs no further patching. A lane with nothing in flight always costs 0
 * (an idle link's rate is unknown, and learning it costs one round trip), so no lane starves
 * for good; an unmeasured lane counts as fast as the fastest.
 *
 * The average lags: it takes one sample per pick interval, and while a loader's window is
 * full no picks come, so a lane that was fast until congestion moved onto it kept its old
 * rate, and the requests asked again to get round it went back onto it (bench/RESULTS.md,
 * moving congestion). So a lane silent for S ms (≥ RATE_INTERVAL_MS) with work in flight is
 * taken to complete at most one request per S ms: what it has shown since, not before.
 */

/** A connection as the chooser sees it (cassandra-driver's Connection has this method). */
export interface Lane {
  getInFlight(): number;
}

/** Shortest interval a rate sample covers: shorter ones are mostly timer noise. */
export const RATE_INTERVAL_MS = 50;
/** Weight of the newest interval in a lane's rate average. */
export const RATE_WEIGHT = 0.3;

interface LaneRate {
  sent: number;
  lastDone: number;
  lastT: number;
  /** Completions when progress was last seen, and when (or when the lane was last idle). */
  progressDone: number;
  progressT: number;
  /** Completions per ms; undefined until measured. */
  rate?: number;
}

export class RateChooser {
  readonly #now: () => number;
  readonly #lanes = new WeakMap<Lane, LaneRate>();

  /** `now`: a clock in ms (runtime.now() or a fake one in tests). */
  constructor(now: () => number) {
    this.#now = now;
  }

  /**
   * The lane for one more request, counted as sent on it; undefined when every lane holds
   * `maxInFlight` already. `previous` (a retry's last lane) is avoided when another exists.
   */
  pick(lanes: readonly Lane[], maxInFlight: number, previous?: Lane): Lane | undefined {
    const t = this.#now();
    let fastest = 0;
    const seen: [Lane, number, LaneRate][] = [];
    for (const lane of lanes) {
      let r = this.#lanes.get(lane);
      if (!r) this.#lanes.set(lane, (r = { sent: 0, lastDone: 0, lastT: t, progressDone: 0, progressT: t }));
      const inFlight = lane.getInFlight();
      const done = Math.max(r.lastDone, r.sent - inFlight);
      if (done > r.progressDone || inFlight === 0) r.progressDone = done, r.progressT = t;
      if (t - r.lastT >= RATE_INTERVAL_MS) {
        // Only intervals with work in flight say anything about the link.
        if (inFlight > 0 || done > r.lastDone) {
          const sample = (done - r.lastDone) / (t - r.lastT);
          r.rate = r.rate === undefined ? sample : RATE_WEIGHT * sample + (1 - RATE_WEIGHT) * r.rate;
        }
        r.lastDone = done, r.lastT = t;
      }
      if (r.rate !== undefined) fastest = Math.max(fastest, r.rate);
      seen.push([lane, inFlight, r]);
    }
    let best: LaneRate | undefined, bestLane: Lane | undefined, bestCost = Infinity;
    for (const [lane, inFlight, r] of seen) {
      if (inFlight >= maxInFlight || (lane === previous && lanes.length > 1)) continue;
      let rate = fastest > 0 ? Math.max(r.rate ?? fastest, fastest * 1e-6) : 1;
      // Silent for S ms with work in flight: at most one completion per S ms, whatever it did before.
      const silent = t - r.progressT;
      if (inFlight > 0 && silent > RATE_INTERVAL_MS) rate = Math.min(rate, 1 / silent);
      const cost = inFlight === 0 ? 0 : (inFlight + 1) / rate;
      if (cost < bestCost) bestCost = cost, best = r, bestLane = lane;
    }
    if (best) best.sent++;
    return bestLane;
  }

  /** A lane's measured completions per ms (undefined until measured). */
  rate(lane: Lane): number | undefined {
    return this.#lanes.get(lane)?.rate;
  }
}
