/**
 * Mutations of JPEG files for the fuzz test (test/decode/fuzz.test.ts) and the long fuzz run
 * (bench/fuzz.bench.ts). Two kinds:
 *
 *   - byte mutations (`mutateBytes`): flips, overwrites, cuts, repeated and deleted runs;
 *   - structure-aware ones (`mutateStructure`): the file is split into its segments (T.81 B.1)
 *     and one is changed where a decoder makes a decision: a segment length that disagrees
 *     with its body, DHT counts that over- or under-fill the code space (C.2), DQT precision
 *     and destinations, SOF sampling factors, component counts and sizes, SOS spectral
 *     selection and successive approximation (Ss/Se/Ah/Al, G.1.1.1) out of range or in an
 *     order a progressive decoder must refuse, restart intervals with missing, extra or
 *     out-of-order RSTn, scans cut, repeated, dropped or moved before their tables.
 *
 * The marker sequence stays valid (or breaks in one place), so the input gets past the checks
 * a byte flip usually trips, into the code behind them.
 */
import { randomInt } from "./random.ts";

/** One segment: its marker, its body (after the length field), and for SOS the entropy-coded data. */
export interface JpegPart {
  marker: number;
  body?: Uint8Array;
  /** SOS only: the scan's coded bytes, RSTn markers included. */
  data?: Uint8Array;
  /** Written into the length field instead of body.length + 2. */
  length?: number;
}

const standalone = (m: number) => m === 0xd8 || m === 0xd9 || m === 0x01 || (m >= 0xd0 && m <= 0xd7);

/** Splits a JPEG into its segments; undefined when it does not parse as one (then bytes are mutated). */
export function parseJpeg(b: Uint8Array): { parts: JpegPart[]; tail: Uint8Array } | undefined {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return undefined;
  const parts: JpegPart[] = [{ marker: 0xd8 }];
  let p = 2;
  while (p + 1 < b.length) {
    if (b[p] !== 0xff) return undefined;
    while (p + 1 < b.length && b[p + 1] === 0xff) p++;
    const m = b[p + 1];
    p += 2;
    if (m === 0xd9) {
      parts.push({ marker: m });
      return { parts, tail: b.slice(p) };
    }
    if (standalone(m)) {
      parts.push({ marker: m });
      continue;
    }
    if (p + 2 > b.length) return undefined;
    const len = (b[p] << 8) | b[p + 1];
    if (len < 2 || p + len > b.length) return undefined;
    const part: JpegPart = { marker: m, body: b.slice(p + 2, p + len) };
    p += len;
    if (m === 0xda) {
      // Coded data runs to the first marker that is neither a stuffed zero nor RSTn.
      let e = p;
      while (e + 1 < b.length && !(b[e] === 0xff && b[e + 1] !== 0 && !(b[e + 1] >= 0xd0 && b[e + 1] <= 0xd7))) e++;
      if (e + 1 >= b.length) e = b.length;
      part.data = b.slice(p, e);
      p = e;
    }
    parts.push(part);
  }
  return { parts, tail: new Uint8Array(0) };
}

export function writeJpeg(parts: JpegPart[], tail: Uint8Array = new Uint8Array(0)): Uint8Array {
  let n = tail.length;
  for (const q of parts) n += 2 + (q.body ? q.body.length + 2 : 0) + (q.data?.length ?? 0);
  const out = new Uint8Array(n);
  let p = 0;
  for (const q of parts) {
    out[p++] = 0xff;
    out[p++] = q.marker;
    if (q.body) {
      const len = (q.length ?? q.body.length + 2) & 0xffff;
      out[p++] = len >> 8;
      out[p++] = len & 255;
      out.set(q.body, p);
      p += q.body.length;
    }
    if (q.data) {
      out.set(q.data, p);
      p += q.data.length;
    }
  }
  out.set(tail, p);
  return out;
}

type Next = () => number;
const pick = <T>(next: Next, xs: readonly T[]): T => xs[randomInt(next, 0, xs.length - 1)];
const isSof = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

function concat(...xs: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(xs.reduce((n, x) => n + x.length, 0));
  let p = 0;
  for (const x of xs) out.set(x, p), (p += x.length);
  return out;
}

/** Values at the edges of a field of `bits` bits, and some in between. */
function edgy(next: Next, bits: number): number {
  const top = 2 ** bits - 1;
  return pick(next, [0, 1, 2, 3, top, top - 1, top >> 1, (top >> 1) + 1, randomInt(next, 0, top)]);
}

// Each structure mutation changes `parts` in place; false when the file has nothing it applies to.
const STRUCTURE: Record<string, (parts: JpegPart[], next: Next) => boolean> = {
  /** A segment length that disagrees with its body (the body stays as it was). */
  "segment-length"(parts, next) {
    const segs = parts.filter((q) => q.body);
    if (!segs.length) return false;
    const q = pick(next, segs);
    const real = q.body!.length + 2;
    q.length = pick(next, [0, 1, 2, 3, real - 1, real + 1, real - randomInt(next, 2, 40), real + randomInt(next, 2, 400), 0xffff]);
    return true;
  },
  /** DHT: class/destination out of range, code counts that overflow the code space or the values. */
  dht(parts, next) {
    const segs = parts.filter((q) => q.marker === 0xc4 && q.body!.length >= 17);
    if (!segs.length) return false;
    const q = pick(next, segs);
    const b = q.body!.slice();
    const kind = randomInt(next, 0, 5);
    if (kind === 0) b[0] = (edgy(next, 4) << 4) | edgy(next, 4); // Tc, Th
    else if (kind === 1) b[1 + randomInt(next, 0, 15)] = edgy(next, 8); // one count
    else if (kind === 2) {
      // Oversubscribed: more codes of length l than 2^l allows.
      const l = randomInt(next, 0, 15);
      b[1 + l] = Math.min(255, (2 << l) + randomInt(next, 0, 3));
    } else if (kind === 3) {
      // Counts summing past 256 values.
      for (let l = 0; l < 16; l++) b[1 + l] = randomInt(next, 16, 40);
    } else if (kind === 4) {
      // Only one code, or no code at all.
      b.fill(0, 1, 17);
      if (next() < 0.5) b[1 + randomInt(next, 0, 15)] = 1;
    } else {
      // Symbol values past what a coefficient can be (DC sizes > 11, AC sizes > 10).
      for (let i = 17; i < b.length; i++) if (next() < 0.2) b[i] = edgy(next, 8);
    }
    q.body = b;
    return true;
  },
  /** DQT: 16-bit precision flag, destinations past 3, zero or huge entries, a cut table. */
  dqt(parts, next) {
    const segs = parts.filter((q) => q.marker === 0xdb && q.body!.length >= 65);
    if (!segs.length) return false;
    const q = pick(next, segs);
    let b: Uint8Array = q.body!.slice();
    const kind = randomInt(next, 0, 3);
    if (kind === 0) b[0] = (randomInt(next, 0, 2) << 4) | randomInt(next, 0, 15);
    else if (kind === 1) for (let i = 1; i < 65; i++) b[i] = next() < 0.5 ? 0 : 255;
    else if (kind === 2) b = b.slice(0, randomInt(next, 1, 64));
    else b = concat(b, b.slice(0, randomInt(next, 1, 65))); // a second, partial table
    q.body = b;
    return true;
  },
  /** SOF: sampling factors (0, 3, 4, 15…), component count and ids, size, precision, process. */
  sof(parts, next) {
    const q = parts.find((q) => isSof(q.marker) && q.body!.length >= 6);
    if (!q) return false;
    const b = q.body!.slice();
    const nc = b[5];
    const kind = randomInt(next, 0, 7);
    if (kind === 7 && nc > 1 && b.length >= 6 + 3 * nc) {
      // Ratios that do not divide (3 against 2, across or down): legal factors, no integer upsampling.
      const a = randomInt(next, 0, nc - 1), c = (a + randomInt(next, 1, nc - 1)) % nc;
      const shift = next() < 0.5 ? 4 : 0, mask = shift ? 0x0f : 0xf0;
      b[6 + 3 * a + 1] = (b[6 + 3 * a + 1] & mask) | (3 << shift);
      b[6 + 3 * c + 1] = (b[6 + 3 * c + 1] & mask) | (2 << shift);
    } else if (kind <= 1 && nc > 0 && b.length >= 6 + 3 * nc) {
      // Odd sampling: one component's H or V, or both, to a value a ratio cannot divide.
      const c = randomInt(next, 0, nc - 1);
      const hv = () => pick(next, [0, 1, 2, 3, 4, 5, 15]);
      b[6 + 3 * c + 1] = kind === 0 ? (hv() << 4) | hv() : (b[6 + 3 * c + 1] & 0xf0) | hv();
    } else if (kind === 2 && nc > 0 && b.length >= 6 + 3 * nc) {
      const c = randomInt(next, 0, nc - 1);
      if (next() < 0.5) b[6 + 3 * c + 2] = randomInt(next, 0, 15); // Tq past the tables
      else b[6 + 3 * c] = b[6 + 3 * ((c + 1) % nc)]; // a repeated component id
    } else if (kind === 3) {
      b[5] = pick(next, [0, 1, 2, 3, 4, 5, 255]); // Nf against the body's size
    } else if (kind === 4) {
      const at = pick(next, [1, 3]); // height, width
      const v = pick(next, [0, 1, 7, 8, 9, 15, 16, 17, 0xffff, randomInt(next, 1, 4000)]);
      b[at] = v >> 8;
      b[at + 1] = v & 255;
    } else if (kind === 5) {
      b[0] = pick(next, [0, 1, 7, 12, 16, 255]); // precision
    } else {
      q.marker = pick(next, [0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc9, 0xca, 0xcb, 0xcd]); // another process
    }
    q.body = b;
    return true;
  },
  /** SOS: Ns, selectors, table ids, and the progressive parameters Ss, Se, Ah, Al. */
  sos(parts, next) {
    const scans = parts.filter((q) => q.marker === 0xda && q.body!.length >= 4);
    if (!scans.length) return false;
    const q = pick(next, scans);
    const b = q.body!.slice();
    const ns = b[0];
    const tail = 1 + 2 * ns; // Ss, Se, AhAl
    const kind = randomInt(next, 0, 6);
    if (kind <= 2 && b.length >= tail + 3) {
      if (kind === 0) b[tail] = edgy(next, 8); // Ss
      else if (kind === 1) b[tail + 1] = edgy(next, 8); // Se
      else b[tail + 2] = (edgy(next, 4) << 4) | edgy(next, 4); // Ah, Al
    } else if (kind === 3 && b.length >= tail + 3) {
      // Inconsistent: Ss > Se, DC and AC together, a refinement with Ah ≠ Al + 1.
      const [ss, se] = pick(next, [[5, 3], [0, 63], [1, 0], [0, 5], [63, 63], [64, 70]]);
      b[tail] = ss;
      b[tail + 1] = se;
      if (next() < 0.5) b[tail + 2] = (randomInt(next, 1, 13) << 4) | randomInt(next, 0, 13);
    } else if (kind === 4 && ns > 0 && b.length >= tail) {
      const c = randomInt(next, 0, ns - 1);
      if (next() < 0.5) b[1 + 2 * c] = next() < 0.5 ? randomInt(next, 0, 255) : b[1 + 2 * ((c + 1) % ns)]; // unknown or repeated component
      else b[2 + 2 * c] = (randomInt(next, 0, 15) << 4) | randomInt(next, 0, 15); // Td, Ta
    } else {
      b[0] = pick(next, [0, 1, 2, 3, 4, 5, 255]); // Ns against the body
    }
    q.body = b;
    return true;
  },
  /** Restart intervals: a DRI of 0, 1 or huge; RSTn dropped, added, renumbered. */
  restart(parts, next) {
    const kind = randomInt(next, 0, 3);
    if (kind === 0) {
      // A DRI before a scan (or its value changed).
      const dri = parts.find((q) => q.marker === 0xdd);
      const v = pick(next, [0, 1, 2, 3, 7, 0xffff, randomInt(next, 1, 300)]);
      const body = new Uint8Array([v >> 8, v & 255]);
      if (dri && next() < 0.5) dri.body = body;
      else {
        const sos = parts.findIndex((q) => q.marker === 0xda);
        if (sos < 0) return false;
        parts.splice(next() < 0.5 ? sos : randomInt(next, 1, sos), 0, { marker: 0xdd, body });
      }
      return true;
    }
    const scans = parts.filter((q) => q.marker === 0xda && q.data && q.data.length > 2);
    if (!scans.length) return false;
    const q = pick(next, scans);
    const d = q.data!;
    const rsts: number[] = [];
    for (let i = 0; i + 1 < d.length; i++) if (d[i] === 0xff && d[i + 1] >= 0xd0 && d[i + 1] <= 0xd7) rsts.push(i);
    if (kind === 1 && rsts.length) {
      const at = pick(next, rsts);
      q.data = concat(d.subarray(0, at), d.subarray(at + 2)); // one missing
    } else if (kind === 2 && rsts.length) {
      const out = d.slice();
      out[pick(next, rsts) + 1] = 0xd0 + randomInt(next, 0, 7); // out of sequence
      q.data = out;
    } else {
      // A restart marker where the coder did not put one.
      const at = randomInt(next, 0, d.length);
      q.data = concat(d.subarray(0, at), new Uint8Array([0xff, 0xd0 + randomInt(next, 0, 7)]), d.subarray(at));
    }
    return true;
  },
  /** Scans cut short, ended by EOI or another marker, repeated, dropped, or moved before the tables. */
  scans(parts, next) {
    const sos = parts.map((q, k) => (q.marker === 0xda ? k : -1)).filter((k) => k >= 0);
    if (!sos.length) return false;
    const at = pick(next, sos);
    const q = parts[at];
    const kind = randomInt(next, 0, 4);
    if (kind === 0 && q.data) q.data = q.data.slice(0, randomInt(next, 0, q.data.length)); // truncated scan
    else if (kind === 1) parts.splice(at + 1, parts.length - at - 1, ...(next() < 0.5 ? [{ marker: 0xd9 }] : [])); // the rest cut off
    else if (kind === 2) parts.splice(at + 1, 0, { ...q }); // the scan twice
    else if (kind === 3) parts.splice(at, 1); // a scan missing
    else {
      // The scan moved to just after SOI or the frame: before its tables or frame.
      const [scan] = parts.splice(at, 1);
      const sof = parts.findIndex((x) => isSof(x.marker));
      parts.splice(next() < 0.5 || sof < 0 ? 1 : sof, 0, scan);
    }
    return true;
  },
  /** A table or frame segment repeated, dropped, or swapped with its neighbour. */
  segments(parts, next) {
    const idx = parts.map((q, i) => (q.body && q.marker !== 0xda ? i : -1)).filter((i) => i >= 0);
    if (!idx.length) return false;
    const at = pick(next, idx);
    const kind = randomInt(next, 0, 2);
    if (kind === 0) parts.splice(at, 0, { ...parts[at] });
    else if (kind === 1) parts.splice(at, 1);
    else if (at + 1 < parts.length) [parts[at], parts[at + 1]] = [parts[at + 1], parts[at]];
    return true;
  },
};

export const STRUCTURE_MUTATIONS = Object.keys(STRUCTURE);

/**
 * One to three structure-aware mutations of `src` (names from STRUCTURE_MUTATIONS, or any);
 * a file that does not parse gets byte mutations instead. Returns the bytes and what was done.
 */
export function mutateStructure(src: Uint8Array, next: Next, only?: string): { bytes: Uint8Array; did: string[] } {
  const parsed = parseJpeg(src);
  if (!parsed) return { bytes: mutateBytes(src, next), did: ["bytes"] };
  const did: string[] = [];
  const n = only ? 1 : randomInt(next, 1, 3);
  for (let t = 0; t < 8 && did.length < n; t++) {
    const name = only ?? pick(next, STRUCTURE_MUTATIONS);
    if (STRUCTURE[name](parsed.parts, next)) did.push(name);
  }
  let bytes = writeJpeg(parsed.parts, parsed.tail);
  // Now and then a byte mutation on top, so both kinds combine.
  if (!only && next() < 0.2) (bytes = mutateBytes(bytes, next)), did.push("bytes");
  return { bytes, did };
}

/** One seeded byte mutation: bit flips, byte overwrites (headers more often), cuts, splices. */
export function mutateBytes(src: Uint8Array, next: Next): Uint8Array<ArrayBuffer> {
  let b = new Uint8Array(src);
  const n = randomInt(next, 1, 4);
  for (let m = 0; m < n; m++) {
    if (b.length === 0) break;
    const kind = randomInt(next, 0, 6);
    const head = Math.min(b.length - 1, 700); // markers and tables live here
    const at = next() < 0.6 ? randomInt(next, 0, head) : randomInt(next, 0, b.length - 1);
    if (kind === 0) b[at] ^= 1 << randomInt(next, 0, 7);
    else if (kind === 1) b[at] = randomInt(next, 0, 255);
    else if (kind === 2) b[at] = [0x00, 0xff, 0x01, 0x7f, 0x80, 0xfe][randomInt(next, 0, 5)];
    else if (kind === 3) b = b.slice(0, at);
    else if (kind === 4) {
      // Duplicate a chunk (repeated segments, scans twice).
      const len = randomInt(next, 1, 200);
      b = concat(b.subarray(0, at), b.subarray(at, at + len), b.subarray(at));
    } else if (kind === 5) {
      // Delete a chunk.
      const len = Math.min(randomInt(next, 1, 64), b.length - at);
      b = concat(b.subarray(0, at), b.subarray(at + len));
    } else {
      // Big values into 16-bit fields (lengths, sizes).
      b[at] = 0xff;
      if (at + 1 < b.length) b[at + 1] = randomInt(next, 0, 255);
    }
  }
  return b;
}
