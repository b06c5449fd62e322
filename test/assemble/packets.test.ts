/**
 * The packet assembler (src/assemble/packets.ts) on its own, on fresh random packets: however
 * the entries of an epoch are split into packets and in whatever order the packets come,
 * ready order hands over every entry once in batches of B (one short batch at most, at the
 * end), a packet of exactly B as it came; strict order hands over batch k as plan positions
 * k·B … in plan order, skipped positions left out, with the pixels and bytes of each entry.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { PacketAssembler } from "../../src/assemble/packets.ts";
import { packBatch } from "../../src/assemble/batch.ts";
import { CHANNELS, COLS, CONN, HEIGHT, IMAGE_AT, LABEL, OFFSETS, ORIENTATION, type Packet, POS, WIDTH } from "../../src/read/packet.ts";
import type { Batch } from "../../src/assemble/batch.ts";

/** A packet of the given plan positions, as a worker makes it: image i is w×h grey pixels all equal to pos % 251, its bytes [pos % 256] × (pos % 5). */
function packet(positions: number[]): Packet {
  const n = positions.length;
  const cols = new Int32Array(COLS * n + n + 1);
  let pix = 0, bytes = 0;
  const size = (p: number) => ((p % 7) + 1) * ((p % 3) + 1);
  for (const p of positions) pix += (size(p) + 3) & ~3, bytes += p % 5;
  const buf = new ArrayBuffer(pix + bytes);
  const u8 = new Uint8Array(buf);
  let at = 0, dat = 0;
  positions.forEach((p, i) => {
    cols[POS * n + i] = p;
    cols[LABEL * n + i] = p * 10;
    cols[WIDTH * n + i] = (p % 7) + 1;
    cols[HEIGHT * n + i] = (p % 3) + 1;
    cols[CHANNELS * n + i] = 1;
    cols[ORIENTATION * n + i] = 1;
    cols[CONN * n + i] = -1;
    cols[IMAGE_AT * n + i] = at;
    u8.fill(p % 251, at, at + size(p));
    at += (size(p) + 3) & ~3;
    cols[OFFSETS * n + i] = dat;
    u8.fill(p % 256, pix + dat, pix + dat + (p % 5));
    dat += p % 5;
  });
  cols[OFFSETS * n + n] = dat;
  return { run: 1, n, cols, buf, dataAt: pix, used: buf.byteLength, ms: new Float32Array(n), conns: [], errors: [] };
}

function check(b: Batch<unknown>, plan: string[], where: string): void {
  b.ids.forEach((id, i) => {
    const p = plan.indexOf(id);
    assert.is(b.labels[i], p * 10, `${where}: label of ${id}`);
    const img = b.images!;
    const px = img.pixels.subarray(img.at[i], img.at[i] + img.width[i] * img.height[i] * img.channels[i]);
    assert.ok(img.width[i] === (p % 7) + 1 && px.every((v) => v === p % 251), `${where}: pixels of ${id}`);
    const d = b.data.subarray(b.offsets[i], b.offsets[i + 1]);
    assert.ok(d.length === p % 5 && d.every((v) => v === p % 256), `${where}: bytes of ${id}`);
  });
}

/** Plan positions cut into packets of random sizes (at most B), in a random order. */
function cut(next: () => number, positions: number[], B: number): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < positions.length;) {
    const k = randomInt(next, 1, B);
    out.push(positions.slice(i, i + k));
    i += k;
  }
  return out;
}

test("ready order: every entry once, batches of B (one short at the end at most), a packet of B handed over as it came", () => {
  const seed = freshSeed(), next = rng(seed);
  for (let round = 0; round < 20; round++) {
    const B = randomInt(next, 1, 9), size = randomInt(next, 1, 60);
    const plan = Array.from({ length: size }, (_, i) => `id${i}`);
    const order = plan.map((_, i) => i).sort(() => next() - 0.5);
    const skipped = new Set(order.filter(() => next() < 0.1));
    const a = new PacketAssembler<unknown>(0, plan, B, false, 1);
    const packets = cut(next, order.filter((p) => !skipped.has(p)), B).map(packet);
    const full = new Set(packets.filter((p) => p.n === B));
    const got: Batch<unknown>[] = [];
    let freed = 0;
    for (const p of packets) {
      a.add(p);
      for (let t = a.take(false); t.batch; t = a.take(false)) got.push(t.batch), (freed += t.freed);
    }
    for (const p of skipped) a.skip(p);
    for (let t = a.take(true); t.batch || t.freed; t = a.take(true)) {
      freed += t.freed;
      if (t.batch) got.push(t.batch);
    }
    const ids = got.flatMap((b) => b.ids);
    assert.is(ids.length, size - skipped.size, `every entry (seed ${seed}, round ${round})`);
    assert.is(new Set(ids).size, ids.length, "each once");
    assert.is(freed, size, "every window slot freed, the skipped ones too");
    assert.ok(got.slice(0, -1).every((b) => b.ids.length === B), `batches of ${B} but the last`);
    for (const b of got) check(b, plan, `seed ${seed}`);
    // A worker's full packet is the batch itself: its views, no copy.
    const asCame = got.filter((b) => packets.some((p) => full.has(p) && b.images!.pixels.buffer === p.buf));
    assert.ok(asCame.length >= [...full].filter((p) => packets.indexOf(p) === 0).length, "the first full packet handed over as it came");
  }
});

test("strict order: batch k is plan positions k·B … in plan order, however its entries came; skipped ones left out, a batch of nothing but skips not handed over", () => {
  const seed = freshSeed(), next = rng(seed);
  for (let round = 0; round < 20; round++) {
    const B = randomInt(next, 1, 9), size = randomInt(next, 1, 60);
    const plan = Array.from({ length: size }, (_, i) => `id${i}`);
    const skipped = new Set(plan.map((_, i) => i).filter(() => next() < 0.15));
    const a = new PacketAssembler<unknown>(0, plan, B, true, 1);
    // Each batch's kept positions, split into one to three packets, packets shuffled.
    const packets: Packet[] = [];
    for (let k = 0; k * B < size; k++) {
      const kept = plan.map((_, i) => i).slice(k * B, (k + 1) * B).filter((p) => !skipped.has(p));
      for (const part of cut(next, kept.sort(() => next() - 0.5), Math.max(1, Math.ceil(kept.length / 2)))) packets.push(packet(part));
    }
    packets.sort(() => next() - 0.5);
    for (const p of skipped) a.skip(p);
    const got: Batch<unknown>[] = [];
    for (const p of packets) {
      a.add(p);
      for (let t = a.take(false); t.batch; t = a.take(false)) got.push(t.batch);
    }
    for (let t = a.take(true); t.batch; t = a.take(true)) got.push(t.batch);
    const want: string[][] = [];
    for (let k = 0; k * B < size; k++) {
      const ids = plan.slice(k * B, (k + 1) * B).filter((_, j) => !skipped.has(k * B + j));
      if (ids.length) want.push(ids);
    }
    assert.equal(got.map((b) => b.ids), want, `the plan's batches, in plan order (seed ${seed}, round ${round})`);
    for (const b of got) check(b, plan, `seed ${seed}`);
  }
});

test("a batch cut across packets is copied into a buffer that its release() hands back for the next cut batch (NOTE [ Merge buffers ]); unreleased, the next one is new", () => {
  const seed = freshSeed(), next = rng(seed);
  const B = 6, size = 60;
  const plan = Array.from({ length: size }, (_, i) => `id${i}`);
  const a = new PacketAssembler<unknown>(0, plan, B, false, 1);
  // Packets of 1 to 4 entries: every batch of 6 is cut across packets.
  const order = plan.map((_, i) => i).sort(() => next() - 0.5);
  const packets: Packet[] = [];
  for (let i = 0; i < size;) {
    const k = randomInt(next, 1, 4);
    packets.push(packet(order.slice(i, i + k)));
    i += k;
  }
  const got: Batch<unknown>[] = [];
  for (const p of packets) {
    a.add(p);
    for (let t = a.take(false); t.batch; t = a.take(false)) got.push(t.batch);
  }
  const cutBatches = got.filter((b) => !packets.some((p) => p.buf === b.images!.pixels.buffer));
  assert.ok(cutBatches.length >= 3, `batches cut across packets (seed ${seed})`);
  assert.ok(cutBatches.every((b) => typeof b.release === "function"), "a cut batch can be released");
  // Taken as they came, none released: each batch in a buffer of its own.
  assert.is(new Set(cutBatches.map((b) => b.images!.pixels.buffer)).size, cutBatches.length, "unreleased: no buffer shared");
  for (const b of got) check(b, plan, `seed ${seed}`);

  // Released one by one as a consumer does: the next cut batch fills the buffer given back.
  const b2 = new PacketAssembler<unknown>(0, plan, B, false, 2);
  const released = new Set<ArrayBufferLike>();
  let reused = 0, cutCount = 0;
  for (const p of packets.map((p) => packet(Array.from(p.cols.subarray(POS * p.n, POS * p.n + p.n))))) {
    b2.add(p);
    for (let t = b2.take(false); t.batch; t = b2.take(false)) {
      const b = t.batch, buf = b.images!.pixels.buffer;
      check(b, plan, `seed ${seed}, released`);
      if (!packets.some((q) => q.buf === buf) && b.release) {
        cutCount++;
        // The largest buffer given back is always kept: where it fits, a given-back one is used.
        const need = b.images!.pixels.length + ((b.data.length + 3) & ~3);
        const largest = Math.max(0, ...[...released].map((r) => r.byteLength));
        if (largest >= need) assert.ok(released.has(buf), `a cut batch of ${need} bytes in a buffer given back (the largest: ${largest}; seed ${seed})`);
        if (released.has(buf)) reused++;
        released.add(buf);
      }
      b.release?.();
      b.release?.(); // twice is once
    }
  }
  assert.ok(reused > 0, `released batches' buffers reused: ${reused} of ${cutCount} (seed ${seed})`);
});

test("a batch read in the loader's thread packs its bytes into a buffer that its release() hands back for a later batch", () => {
  const seed = freshSeed(), next = rng(seed);
  // Samples of ~1 MB: larger than any buffer the tests above gave back, so only this one fits.
  const arrived = (k: number, size: number) => Array.from({ length: 4 }, (_, i) => {
    const data = randomBytes(next, size - randomInt(next, 0, 1000));
    return { s: { id: `b${k}s${i}`, label: i, data }, item: data };
  });
  const first = packBatch(0, 0, arrived(0, 1 << 20), {});
  assert.ok(typeof first.release === "function", "a packed batch can be released");
  const kept = first.data.buffer;
  first.release!();
  const batch = arrived(1, 1 << 19);
  const second = packBatch(0, 1, batch, {});
  assert.is(second.data.buffer, kept, `the released buffer is filled again (seed ${seed})`);
  batch.forEach((a, i) => assert.ok(second.data.subarray(second.offsets[i], second.offsets[i + 1]).every((v, j) => v === a.s.data[j]), `sample ${i}'s bytes`));
  const third = packBatch(0, 2, arrived(2, 1 << 19), {});
  assert.is.not(third.data.buffer, kept, "held by an unreleased batch: not given out again");
});
