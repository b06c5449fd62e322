// huffman: the entropy-coded data of a batch of baseline JPEGs → their quantized DCT blocks, in
// the coefficient upload's block layout (NOTE [ Coefficient upload ], src/gpu/idct.ts), for
// idct_planes.wgsl to finish. Decoding is T.81's (F.2.2: DECODE, RECEIVE, EXTEND; the DC
// prediction of F.2.1.3.1, reset at each restart interval), with the wasm decoder's rules for
// what is an error (wasm/jpeg/scan.ts); src/gpu/huffman.ts has the plan and NOTE [ Parallel
// Huffman decoding ].
//
// The stream is cut into chunks of CHUNK_BITS bits; a thread decodes one chunk, starting where
// the previous chunk's decode stopped. Where that is unknown, a thread guesses a bit before the
// chunk and the first block of an MCU, and self-synchronization (Weißenberger and Schmidt,
// "Massively Parallel Huffman Decoding on GPUs", ICPP 2018) usually brings its decode onto the
// true code boundaries and MCU positions by the chunk. Passes:
//   speculate  one thread a chunk: decode from a guess LEAD_BITS before the chunk (or from the
//              interval's start, exactly) to the chunk, whose start is the first code boundary
//              at or past its first bit, then on to the first one at or past its end
//   resync     one thread a chunk, repeated: decode again from the previous chunk's new exit
//              where it is not the start this chunk's decode used (state in → state out)
//   settle     one thread an interval: walks its chunks in order, decodes again any whose start
//              still is not its predecessor's exit (so the result never depends on how soon
//              the guesses synchronized), sums blocks and DC differences into each chunk's
//              first block and DC predictions, and flags the image where its codes fail
//   emit       one thread a chunk: decode once more from the settled start, writing each
//              coefficient (atomicOr into zeroed words: a block may span two chunks)
//
// Bindings (group 0):
//   0  storage, read   scan: array<u32>      NOTE [ Scan upload ] (src/gpu/huffman.ts)
//   1  storage, rw     coef: atomic<u32>[]   the coefficient upload; the scan images' blocks zeroed
//   2  storage, read   stateIn: array<u32>   chunk records, the previous round's (resync)
//   3  storage, rw     stateOut: array<u32>  chunk records, this round's
//   4  storage, rw     status: atomic<u32>[] 0: chunks settle decoded again, 1: chunks resync
//                                            decoded again, then per scan image its flags
// Every index into a buffer is clamped to the buffer, whatever the file holds.

@group(0) @binding(0) var<storage, read> scan: array<u32>;
@group(0) @binding(1) var<storage, read_write> coef: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> stateIn: array<u32>;
@group(0) @binding(3) var<storage, read_write> stateOut: array<u32>;
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;

const INTERVAL_WORDS: u32 = 8u;
const IMAGE_WORDS: u32 = 24u;
const TABLE_WORDS: u32 = 616u;
const CHUNK_WORDS: u32 = 16u;
const STATUS_IMAGES: u32 = 4u;
const NONE: u32 = 0xffffffffu;
// Bits a guess decodes before its chunk (NOTE [ Parallel Huffman decoding ], src/gpu/huffman.ts).
override LEAD_BITS: u32 = 4096u;

// Image flags (status[STATUS_IMAGES + k]): the CPU decodes a flagged image instead.
const F_ERROR: u32 = 1u; // a code not in its table, a DC magnitude above 15, a run past the block
const F_SHORT: u32 = 2u; // a code needs bits past its interval, or the interval ends early
const F_TRAIL: u32 = 4u; // more than fill bits follow an interval's last MCU
const F_RANGE: u32 = 8u; // a block outside its component's grid (a plan that does not hold)

// Natural index of zig-zag position k (T.81 Figure A.6).
var<private> NATURAL: array<u32, 64> = array<u32, 64>(
  0u, 1u, 8u, 16u, 9u, 2u, 3u, 10u, 17u, 24u, 32u, 25u, 18u, 11u, 4u, 5u,
  12u, 19u, 26u, 33u, 40u, 48u, 41u, 34u, 27u, 20u, 13u, 6u, 7u, 14u, 21u, 28u,
  35u, 42u, 49u, 56u, 57u, 50u, 43u, 36u, 29u, 22u, 15u, 23u, 30u, 37u, 44u, 51u,
  58u, 59u, 52u, 45u, 38u, 31u, 39u, 46u, 53u, 60u, 61u, 54u, 47u, 55u, 62u, 63u,
);

// A decode in progress: where it is (bit, block of the MCU, zig-zag position), what it has done.
struct Run {
  pos: u32,
  u: u32,
  k: u32,
  blocks: u32, // blocks completed
  flags: u32,
  failed: u32, // blocks completed before the first failure, NONE while none
  dc: array<i32, 3>, // per component: the DC differences' sum, or (emit) the predictions
  block: u32, // emit: the block being decoded, in the image's scan order
  base: u32, // emit: its first coefficient word (blockBase)
}

fn word(i: u32) -> u32 {
  return scan[min(i, arrayLength(&scan) - 1u)];
}

fn bswap(x: u32) -> u32 {
  return (x << 24u) | ((x & 0xff00u) << 8u) | ((x >> 8u) & 0xff00u) | (x >> 24u);
}

// The 32 bits of the interval's data from bit `pos`, the first in the top bit; bits at or past
// `end` read as 0 (the wasm decoder's reader feeds zeros at a marker).
fn window(pos: u32, end: u32) -> u32 {
  let at = scan[6] + (pos >> 5u);
  let a = bswap(word(at));
  let b = bswap(word(at + 1u));
  let s = pos & 31u;
  let v = select((a << s) | (b >> ((32u - s) & 31u)), a, s == 0u);
  if (pos + 32u <= end) {
    return v;
  }
  let keep = select(end - pos, 0u, end <= pos);
  return select(v & ~(0xffffffffu >> keep), 0u, keep == 0u);
}

// (length << 8) | symbol of the code at the top of `bits` in table record `tb`, 0 when no code
// of the table starts them: a 9-bit lookup, then the MAXCODE walk of T.81 Figure F.16.
fn lookup(tb: u32, bits: u32) -> u32 {
  let e = word(tb + (bits >> 23u));
  if (e != 0u) {
    return e;
  }
  for (var l = 10u; l <= 16u; l = l + 1u) {
    let code = i32(bits >> (32u - l));
    if (code <= bitcast<i32>(word(tb + 512u + l))) {
      let idx = code + bitcast<i32>(word(tb + 530u + l));
      if (idx < 0 || u32(idx) >= word(tb + 548u)) {
        return 0u;
      }
      return (l << 8u) | ((word(tb + 552u + (u32(idx) >> 2u)) >> ((u32(idx) & 3u) * 8u)) & 255u);
    }
  }
  return 0u;
}

// EXTEND (T.81 Figure F.12) of the t-bit value v, t ≥ 1.
fn extend(v: u32, t: u32) -> i32 {
  let x = i32(v);
  return select(x, x - (1 << t) + 1, x < (1 << (t - 1u)));
}

// The first coefficient word of block `block` (slot `slotA` of its MCU) of image record `imr`,
// NONE when the block lies outside its component's grid.
fn blockBase(imr: u32, block: u32, slotA: u32) -> u32 {
  let m = block / max(word(imr + 1u), 1u);
  let across = max(word(imr + 2u), 1u);
  let x = (m % across) * ((slotA >> 4u) & 15u) + ((slotA >> 12u) & 15u);
  let y = (m / across) * ((slotA >> 8u) & 15u) + ((slotA >> 16u) & 15u);
  let rec = atomicLoad(&coef[4]) + (word(imr) + (slotA & 15u)) * 8u;
  let bw = atomicLoad(&coef[rec + 1u]);
  if (x >= bw || y >= atomicLoad(&coef[rec + 2u])) {
    return NONE;
  }
  return atomicLoad(&coef[rec + 3u]) + (y * bw + x) * 32u;
}

// Writes coefficient k (zig-zag) of the block whose first word is `base`: false where there is
// no such block. Two coefficients share a word, and a block may be written by two chunks' threads.
fn put(base: u32, k: u32, value: i32) -> bool {
  let n = NATURAL[k & 63u];
  let w = base + (n >> 1u);
  if (base == NONE || w >= arrayLength(&coef)) {
    return false;
  }
  atomicOr(&coef[w], (u32(value) & 0xffffu) << ((n & 1u) * 16u));
  return true;
}

// Notes the first failure; a failing code ends the decode, except a guess's (`tolerant`), which
// steps one bit on and starts an MCU again: its exit stays worth trying as a start, and
// (failed, flags) keep what the chain needs should its start prove true.
fn fail(r: ptr<function, Run>, flag: u32, tolerant: bool) -> bool {
  if ((*r).failed == NONE) {
    (*r).failed = (*r).blocks;
  }
  (*r).flags |= flag;
  if (!tolerant || flag == F_SHORT) {
    return true;
  }
  (*r).pos += 1u;
  (*r).u = 0u;
  (*r).k = 0u;
  return false;
}

// Decodes interval record `ivr` of image record `imr` from r's position until the first code
// boundary at or past `stop`, a failure (see fail), or (emit) block `limit`.
fn decode(r: ptr<function, Run>, ivr: u32, imr: u32, stop: u32, emit: bool, limit: u32, tolerant: bool) {
  let end = word(ivr + 2u);
  let bpm = max(word(imr + 1u), 1u);
  let tables = scan[3];
  loop {
    if ((*r).pos >= stop || (emit && (*r).block >= limit)) {
      break;
    }
    let u = min((*r).u, 9u);
    let slotA = word(imr + 4u + 2u * u);
    let slotB = word(imr + 5u + 2u * u);
    let j = min(slotA & 15u, 2u);
    let bits = window((*r).pos, end);
    if (emit && (*r).k == 0u) {
      (*r).base = blockBase(imr, (*r).block, slotA);
    }
    if ((*r).k == 0u) {
      // DC (F.2.2.1): a magnitude category t, then t bits.
      let e = lookup(tables + (slotB & 0xffffu) * TABLE_WORDS, bits);
      let len = e >> 8u;
      let t = e & 255u;
      if (e == 0u || t > 15u) {
        if (fail(r, F_ERROR, tolerant)) {
          break;
        }
        continue;
      }
      if ((*r).pos + len + t > end) {
        fail(r, F_SHORT, tolerant);
        break;
      }
      var diff = 0;
      if (t != 0u) {
        diff = extend((bits << len) >> (32u - t), t);
      }
      (*r).pos += len + t;
      (*r).dc[j] += diff;
      if (emit && !put((*r).base, 0u, (*r).dc[j])) {
        (*r).flags |= F_RANGE;
      }
      (*r).k = 1u;
    } else {
      // AC (F.2.2.2): RRRRSSSS, a run of zeros and a magnitude category, then SSSS bits.
      let e = lookup(tables + (slotB >> 16u) * TABLE_WORDS, bits);
      if (e == 0u) {
        if (fail(r, F_ERROR, tolerant)) {
          break;
        }
        continue;
      }
      let len = e >> 8u;
      let run = (e >> 4u) & 15u;
      let s = e & 15u;
      if ((*r).pos + len + s > end) {
        fail(r, F_SHORT, tolerant);
        break;
      }
      if (s == 0u) {
        (*r).pos += len;
        // ZRL skips 16 zeros (past the block's end ends it, as the wasm decoder does); EOB ends it.
        (*r).k = select(64u, (*r).k + 16u, run == 15u);
      } else {
        let k = (*r).k + run;
        if (k > 63u) {
          if (fail(r, F_ERROR, tolerant)) {
            break;
          }
          continue;
        }
        (*r).pos += len + s;
        if (emit && !put((*r).base, k, extend((bits << len) >> (32u - s), s))) {
          (*r).flags |= F_RANGE;
        }
        (*r).k = k + 1u;
      }
    }
    if ((*r).k >= 64u) {
      (*r).k = 0u;
      (*r).u = select(u + 1u, 0u, u + 1u >= bpm);
      (*r).blocks += 1u;
      (*r).block += 1u;
    }
  }
}

// The chunk's interval: the last whose FIRST_CHUNK ≤ c.
fn intervalOf(c: u32) -> u32 {
  var lo = 0u;
  var hi = max(scan[1], 1u) - 1u;
  let at = scan[4];
  while (lo < hi) {
    let mid = (lo + hi + 1u) / 2u;
    if (word(at + mid * INTERVAL_WORDS + 3u) <= c) {
      lo = mid;
    } else {
      hi = mid - 1u;
    }
  }
  return at + lo * INTERVAL_WORDS;
}

fn imageOf(ivr: u32) -> u32 {
  return scan[5] + word(ivr) * IMAGE_WORDS;
}

fn chunkEnd(ivr: u32, c: u32) -> u32 {
  let start = word(ivr + 1u) + (c - word(ivr + 3u)) * scan[7];
  return min(start + scan[7], word(ivr + 2u));
}

fn chunkStart(ivr: u32, c: u32) -> u32 {
  return word(ivr + 1u) + (c - word(ivr + 3u)) * scan[7];
}

fn fresh(pos: u32, uk: u32) -> Run {
  var r: Run;
  r.pos = pos;
  r.u = uk >> 8u;
  r.k = uk & 255u;
  r.failed = NONE;
  return r;
}

// Chunk record: START_POS START_UK EXIT_POS EXIT_UK BLOCKS FLAGS DC0 DC1 DC2 FIRST_BLOCK
// PRED0 PRED1 PRED2 FAILED (blocks completed before the first failure, NONE: none).
fn record(c: u32, startPos: u32, startUk: u32, r: Run) {
  let at = min(c, arrayLength(&stateOut) / CHUNK_WORDS - 1u) * CHUNK_WORDS;
  stateOut[at] = startPos;
  stateOut[at + 1u] = startUk;
  stateOut[at + 2u] = r.pos;
  stateOut[at + 3u] = (r.u << 8u) | r.k;
  stateOut[at + 4u] = r.blocks;
  stateOut[at + 5u] = r.flags;
  stateOut[at + 6u] = u32(r.dc[0]);
  stateOut[at + 7u] = u32(r.dc[1]);
  stateOut[at + 8u] = u32(r.dc[2]);
  stateOut[at + 13u] = r.failed;
}

fn chunkId(g: vec3<u32>, groups: vec3<u32>) -> u32 {
  return g.x + g.y * groups.x * 64u;
}

@compute @workgroup_size(64)
fn speculate(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let c = chunkId(g, groups);
  if (c >= scan[2]) {
    return;
  }
  let ivr = intervalOf(c);
  let imr = imageOf(ivr);
  let start = chunkStart(ivr, c);
  // The guess is made LEAD_BITS before the chunk (or at the interval's start, exactly), and the
  // chunk's start is the first code boundary at or past its first bit: a decode that has
  // synchronized by then starts where its predecessor's exit is, and needs no resync.
  var r = fresh(max(start, word(ivr + 1u) + LEAD_BITS) - LEAD_BITS, 0u);
  decode(&r, ivr, imr, start, false, 0u, true);
  let at = r.pos;
  let uk = (r.u << 8u) | r.k;
  r = fresh(at, uk);
  decode(&r, ivr, imr, chunkEnd(ivr, c), false, 0u, true);
  record(c, at, uk, r);
}

@compute @workgroup_size(64)
fn resync(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let c = chunkId(g, groups);
  if (c >= scan[2]) {
    return;
  }
  let ivr = intervalOf(c);
  let at = min(c, arrayLength(&stateIn) / CHUNK_WORDS - 1u) * CHUNK_WORDS;
  let prev = at - CHUNK_WORDS;
  let first = c == word(ivr + 3u);
  if (first || (stateIn[at] == stateIn[prev + 2u] && stateIn[at + 1u] == stateIn[prev + 3u])) {
    for (var i = 0u; i < CHUNK_WORDS; i = i + 1u) {
      stateOut[at + i] = stateIn[at + i];
    }
    return;
  }
  atomicAdd(&status[1], 1u);
  var r = fresh(stateIn[prev + 2u], stateIn[prev + 3u]);
  decode(&r, ivr, imageOf(ivr), chunkEnd(ivr, c), false, 0u, true);
  record(c, stateIn[prev + 2u], stateIn[prev + 3u], r);
}

@compute @workgroup_size(64)
fn settle(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let s = chunkId(g, groups);
  if (s >= scan[1]) {
    return;
  }
  let ivr = scan[4] + s * INTERVAL_WORDS;
  let imr = imageOf(ivr);
  let firstBlock = word(ivr + 5u);
  let expected = word(ivr + 6u);
  let chunks = word(ivr + 4u);
  let last = arrayLength(&stateOut) / CHUNK_WORDS - 1u;
  var pos = word(ivr + 1u);
  var uk = 0u;
  var blocks = 0u;
  var dc = array<i32, 3>(0, 0, 0);
  var flags = 0u;
  for (var i = 0u; i < chunks; i = i + 1u) {
    let c = word(ivr + 3u) + i;
    let at = min(c, last) * CHUNK_WORDS;
    // The rest of an interval whose blocks are all found writes nothing.
    stateOut[at + 9u] = firstBlock + expected;
    if (blocks >= expected) {
      continue;
    }
    if (stateOut[at] != pos || stateOut[at + 1u] != uk) {
      atomicAdd(&status[0], 1u);
      var r = fresh(pos, uk);
      decode(&r, ivr, imr, chunkEnd(ivr, c), false, 0u, true);
      record(c, pos, uk, r);
    }
    stateOut[at + 9u] = firstBlock + blocks;
    stateOut[at + 10u] = u32(dc[0]);
    stateOut[at + 11u] = u32(dc[1]);
    stateOut[at + 12u] = u32(dc[2]);
    let done = stateOut[at + 4u];
    // A failure before the interval's last block is the image's (after it: fill bits, or what
    // emit's F_TRAIL finds).
    if (stateOut[at + 13u] != NONE && blocks + stateOut[at + 13u] < expected) {
      flags |= stateOut[at + 5u];
    }
    blocks += done;
    dc[0] += bitcast<i32>(stateOut[at + 6u]);
    dc[1] += bitcast<i32>(stateOut[at + 7u]);
    dc[2] += bitcast<i32>(stateOut[at + 8u]);
    pos = stateOut[at + 2u];
    uk = stateOut[at + 3u];
  }
  if (blocks < expected) {
    flags |= F_SHORT;
  }
  if (flags != 0u) {
    atomicOr(&status[STATUS_IMAGES + word(imr + 3u)], flags);
  }
}

@compute @workgroup_size(64)
fn emit(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let c = chunkId(g, groups);
  if (c >= scan[2]) {
    return;
  }
  let ivr = intervalOf(c);
  let imr = imageOf(ivr);
  let at = min(c, arrayLength(&stateOut) / CHUNK_WORDS - 1u) * CHUNK_WORDS;
  let limit = word(ivr + 5u) + word(ivr + 6u);
  if (stateOut[at + 9u] >= limit) {
    return;
  }
  var r = fresh(stateOut[at], stateOut[at + 1u]);
  r.block = stateOut[at + 9u];
  r.dc = array<i32, 3>(bitcast<i32>(stateOut[at + 10u]), bitcast<i32>(stateOut[at + 11u]), bitcast<i32>(stateOut[at + 12u]));
  // A chunk may start inside a block, which an earlier chunk's thread began.
  r.base = blockBase(imr, r.block, word(imr + 4u + 2u * min(r.u, 9u)));
  decode(&r, ivr, imr, chunkEnd(ivr, c), true, limit, false);
  var flags = r.flags & F_RANGE;
  // The interval's last block: only its last byte's fill bits may follow.
  if (r.block == limit && word(ivr + 2u) - r.pos >= 8u) {
    flags |= F_TRAIL;
  }
  if (flags != 0u) {
    atomicOr(&status[STATUS_IMAGES + word(imr + 3u)], flags);
  }
}
