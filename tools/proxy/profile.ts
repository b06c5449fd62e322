/**
 * What the latency proxy does to one connection: a profile of delay, jitter and bandwidth,
 * chosen per accepted connection (`profile(connIndex)`), and helpers for the profiles the
 * benchmarks use ("Hiding Latencies…" (arXiv:2503.22643): RTT 0 / 20 ms / 150 ms, and "one
 * connection in four congested at 1 MB/s").
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../../src/errors.ts";

export interface Profile {
  /** One-way delay in ms, added in each direction: the round trip grows by 2 × delayMs. */
  delayMs: number;
  /**
   * Each piece of data is delayed by delayMs + a uniform draw in [−jitterMs, +jitterMs]
   * (clamped at 0), but never released before the piece ahead of it: jitter never reorders
   * bytes within a connection (default 0).
   */
  jitterMs?: number;
  /**
   * Cap on bytes per second, in each direction separately (default: none). A function of the
   * runtime clock (ms) gives a cap that changes over time (undefined: no cap at that time).
   */
  bandwidthBytesPerSec?: number | ((now: number) => number | undefined);
  /** Seed of the jitter draws; the connection index is mixed in (default 1). */
  seed?: number;
}

/** Picks the profile of the connection accepted `connIndex`-th (0, 1, 2, … in accept order). */
export type ProfileFn = (connIndex: number) => Profile;

/** Every connection alike: `delayMs` one way, so the round trip grows by 2 × delayMs. */
export function uniform(delayMs: number, extra: Omit<Profile, "delayMs"> = {}): ProfileFn {
  const p = checkProfile({ ...extra, delayMs }, "make a proxy profile");
  return () => p;
}

/**
 * Uneven connections: connection `i` gets `congested` when `i % n === n - 1` (the 4th, 8th, …
 * for n = 4), `normal` otherwise. The first connection, often a driver's control connection,
 * is normal.
 *
 * With `rotateMs`, congestion moves, as on routes whose load changes ("Hiding Latencies…"
 * (arXiv:2503.22643), §3.3): in period k = ⌊(now − start) / rotateMs⌋ connection `i` is congested
 * when `(i + k) % n === n - 1`. Only the bandwidth cap moves; delay and jitter are `normal`'s.
 *
 * ```ts
 * const oneInFour = unevenEvery(4, { delayMs: 10, bandwidthBytesPerSec: 1_000_000 }, { delayMs: 10 });
 * const moving = unevenEvery(4, { delayMs: 10, bandwidthBytesPerSec: 1_000_000 }, { delayMs: 10 }, 2000);
 * ```
 */
export function unevenEvery(n: number, congested: Profile, normal: Profile, rotateMs?: number): ProfileFn {
  if (!Number.isInteger(n) || n < 1) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot make a proxy profile as 'n' must be a positive integer: current value is ${n}`);
  }
  const c = checkProfile(congested, "make a proxy profile (congested)");
  const ok = checkProfile(normal, "make a proxy profile (normal)");
  if (rotateMs === undefined) return (i) => (i % n === n - 1 ? c : ok);
  if (!(Number.isFinite(rotateMs) && rotateMs > 0)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot make a proxy profile as 'rotateMs' must be > 0: current value is ${rotateMs}`);
  }
  const start = runtime.now();
  const congestedNow = (i: number, now: number) => (i + Math.floor((now - start) / rotateMs)) % n === n - 1;
  return (i) => ({ ...ok, bandwidthBytesPerSec: (now) => capAt(congestedNow(i, now) ? c : ok, now) });
}

/** The cap of `p` at time `now` (runtime clock, ms), or undefined for none. */
export function capAt(p: Profile, now: number): number | undefined {
  const bw = p.bandwidthBytesPerSec;
  return typeof bw === "function" ? bw(now) : bw;
}

/** Returns `p` if every field can work, else a CassetteError that says `Cannot ${doing} as …`. */
export function checkProfile(p: Profile, doing: string): Profile {
  const bad = (name: string, rule: string, value: unknown): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot ${doing} as '${name}' must be ${rule}: current value is ${value}`);
  };
  if (typeof p !== "object" || p === null) bad("profile", "an object like { delayMs: 10 }", p);
  const finite = (v: unknown) => typeof v === "number" && Number.isFinite(v);
  if (!finite(p.delayMs) || p.delayMs < 0) bad("delayMs", "≥ 0", p.delayMs);
  if (p.jitterMs !== undefined && (!finite(p.jitterMs) || p.jitterMs < 0)) bad("jitterMs", "≥ 0", p.jitterMs);
  const bw = p.bandwidthBytesPerSec;
  if (bw !== undefined && typeof bw !== "function" && (!finite(bw) || bw <= 0)) bad("bandwidthBytesPerSec", "> 0 (leave it out for no cap)", bw);
  if (p.seed !== undefined && !Number.isInteger(p.seed)) bad("seed", "an integer", p.seed);
  return p;
}
