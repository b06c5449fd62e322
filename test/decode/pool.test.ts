import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { createJpegDecoder } from "../../src/decode/jpeg.ts";
import { JpegError } from "../../src/decode/jpeg_error.ts";
import { createDecodePool } from "../../src/decode/pool.ts";
import jpegjs from "jpeg-js";
import { corpus, disabled, jpegBytes } from "./_fixtures.ts";

async function largeJpeg(): Promise<Uint8Array> {
  const src = (await createJpegDecoder()).decode(jpegBytes("chinafull_420_q90.jpg"));
  const W = 1920, H = 1280;
  const rgba = new Uint8Array(W * H * 4);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const s = ((y % src.height) * src.width + (x % src.width)) * 3;
      rgba.set(src.data.subarray(s, s + 3), (y * W + x) * 4);
    }
  }
  return new Uint8Array(jpegjs.encode({ data: rgba, width: W, height: H }, 80).data);
}

test("pool: every corpus file decodes in workers exactly as in this thread; input buffers are transferred", async () => {
  const jpeg = await createJpegDecoder();
  const pool = await createDecodePool({ workers: 2 });
  try {
    const skip = disabled();
    const names = corpus().filter((n) => !skip.has(n));
    const inputs = names.map((n) => jpegBytes(n));
    const results = await Promise.all(inputs.map((b) => pool.decode(b)));
    for (let i = 0; i < names.length; i++) {
      assert.is(inputs[i].byteLength, 0, `${names[i]}: the input's buffer went to the worker (detached here)`);
      const want = jpeg.decode(jpegBytes(names[i]));
      assert.equal([results[i].width, results[i].height, results[i].channels], [want.width, want.height, want.channels]);
      assert.equal(results[i].data, want.data, `${names[i]}: same pixels`);
    }
    // A view into a larger buffer is copied, not transferred: the caller's buffer stays whole.
    const big = new Uint8Array(10_000 + jpegBytes("px1_420_q90.jpg").length);
    big.set(jpegBytes("px1_420_q90.jpg"), 10_000);
    const view = big.subarray(10_000);
    assert.is((await pool.decode(view)).width, 1);
    assert.is(big.byteLength, 10_000 + view.length);
    assert.is(pool.pending, 0);
  } finally {
    pool.close();
  }
});

test("pool: results come in completion order, and errors are JpegErrors with reason and offset", async () => {
  const pool = await createDecodePool({ workers: 2, perWorker: 1 });
  try {
    // One large image, then small ones: with two workers, the small ones finish (and are
    // yielded) while the large one is still decoding. The large one (2.5 Mpx, ~100× the work
    // of all the small ones together) is the corpus photo tiled and re-encoded by jpeg-js.
    const large = await largeJpeg();
    // Both workers up first: a worker still starting (hundreds of ms on a loaded machine) left
    // the small ones queued behind the large one, and the order said nothing about the pool.
    await Promise.all(Array.from({ length: 4 }, () => pool.decode(jpegBytes("px17x33_420_prog.jpg")))); // each its own buffer: the pool transfers it
    const jobs = [
      { name: "large", bytes: large },
      ...Array.from({ length: 6 }, (_, i) => ({ name: `small${i}`, bytes: jpegBytes("px17x33_420_prog.jpg") })),
      { name: "bad", bytes: jpegBytes("china_420_arith.jpg") },
    ];
    const order: string[] = [];
    for await (const r of pool.decodeAll(jobs)) {
      order.push(r.job.name);
      if (r.job.name === "bad") {
        assert.ok(r.error instanceof JpegError, `${r.error}`);
        assert.is((r.error as JpegError).reason, "arithmetic");
        assert.is((r.error as JpegError).code, "ERR_UNSUPPORTED");
        assert.ok((r.error as JpegError).offset > 0);
      } else {
        assert.ok(r.image && r.image.data.length === r.image.width * r.image.height * 3, r.job.name);
      }
    }
    assert.is(order.length, jobs.length, "every job once");
    assert.equal(new Set(order).size, jobs.length);
    assert.ok(order.indexOf("large") > 0, `the large image is not first: ${order.join(" ")}`);
  } finally {
    pool.close();
  }
});

test("pool: closing rejects what is left, and bad options are refused", async () => {
  const pool = await createDecodePool({ workers: 1 });
  const p = pool.decode(jpegBytes("chinafull_420_q90.jpg"));
  pool.close();
  await p.then(() => assert.unreachable("closed before it finished"), (e: Error) => assert.match(e.message, /closed/));
  await pool.decode(jpegBytes("px1_420_q90.jpg")).then(() => assert.unreachable(), (e: Error) => assert.match(e.message, /closed/));
  await createDecodePool({ workers: 0 }).then(() => assert.unreachable(), (e: Error) => assert.match(e.message, /'workers' must be a positive integer: current value is 0/));
});

test("pool: prepared jobs' bytes cross in buffers the workers send back (NOTE [ Job buffers ]): the callers keep theirs, every answer is right", async () => {
  const jpeg = await createJpegDecoder();
  const pool = await createDecodePool({ workers: 2, perWorker: 2 });
  try {
    const skip = disabled();
    const names = corpus().filter((n) => !skip.has(n)).slice(0, 12);
    const inputs = names.map((n) => jpegBytes(n));
    // In rounds, so that later jobs can take the buffers earlier answers brought back.
    for (let round = 0; round < 3; round++) {
      const got = await Promise.all(inputs.map((b, i) => pool.prepare({ bytes: b, id: `${names[i]}#${round}`, label: i }) as Promise<{ data: Uint8Array; width: number }>));
      for (let i = 0; i < names.length; i++) {
        assert.ok(inputs[i].byteLength > 0, `${names[i]}: the caller's bytes stay here`);
        assert.equal(got[i].data, jpeg.decode(jpegBytes(names[i])).data, `${names[i]}, round ${round}: same pixels`);
      }
    }
    const st = pool.stats();
    assert.ok((st.reused ?? 0) >= names.length, `jobs carried in a buffer sent back: ${st.reused} of ${st.jobs}`);
  } finally {
    pool.close();
  }
});

test("pool: answers' pixel buffers given back (recycle) carry later answers' pixels (NOTE [ Image buffers ]): every answer right whatever the sizes; foreign and twice-given buffers are not taken", async () => {
  const jpeg = await createJpegDecoder();
  const pool = await createDecodePool({ workers: 2, perWorker: 2 });
  try {
    const skip = disabled();
    // Sizes from a few pixels to a large photo, so that a buffer given back is often larger than the next image.
    const names = corpus().filter((n) => !skip.has(n)).slice(0, 16);
    const inputs = names.map((n) => jpegBytes(n));
    const foreign = new ArrayBuffer(8 << 20);
    pool.recycle(foreign);
    for (let round = 0; round < 4; round++) {
      const got = await Promise.all(inputs.map((b, i) => pool.prepare({ bytes: b, id: `${names[i]}#${round}`, label: i }) as Promise<{ data: Uint8Array; width: number; height: number; channels: number }>));
      for (let i = 0; i < names.length; i++) {
        const want = jpeg.decode(jpegBytes(names[i]));
        assert.is(got[i].data.byteLength, want.width * want.height * want.channels, `${names[i]}, round ${round}: a view of the image's bytes only`);
        assert.equal(got[i].data, want.data, `${names[i]}, round ${round}: same pixels`);
      }
      // Given back as a released batch does, the first one twice.
      pool.recycle(got[0].data.buffer as ArrayBuffer);
      for (const g of got) pool.recycle(g.data.buffer as ArrayBuffer);
    }
    const st = pool.stats();
    assert.ok((st.recycled ?? 0) >= names.length, `answers decoded into a buffer given back: ${st.recycled} of ${st.jobs}`);
    assert.is(foreign.byteLength, 8 << 20, "a buffer the pool did not make is never sent to a worker");
  } finally {
    pool.close();
  }
});
