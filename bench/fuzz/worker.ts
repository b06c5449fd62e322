/**
 * The long fuzz run's worker (bench/fuzz.bench.ts): runs the test suite's fuzz loop
 * (test/_support/fuzz.ts) over a range of inputs, in slices, and reports each slice's tally
 * and every crash or over-time input. It stores the input it is on in a shared counter, so the
 * main thread can tell a hang (an input that never returns) and replace the worker.
 *
 *   → { t: "setup", seed, formats, jpegs, pngs, maxMs, progress }
 *   → { t: "run", first, end }
 *   ← { t: "slice", format, tally }  …  ← { t: "failure", … }  …  ← { t: "finished" }
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { fuzzLoop, type FuzzTally } from "../../test/_support/fuzz.ts";
import { createJpegDecoder, type JpegDecoder } from "../../src/decode/jpeg.ts";
import { JpegError } from "../../src/decode/jpeg_error.ts";
import { createPngDecoder, type PngDecoder } from "../../src/decode/png.ts";
import { PngError } from "../../src/decode/png_error.ts";
import { type Format, type FuzzInput, formatOf, makeInput, SLICE } from "./inputs.ts";

const scope = runtime.workerScope();
let setup: { seed: number; formats: Format[]; jpegs: Uint8Array[]; pngs: Uint8Array[]; maxMs: number; progress: Int32Array };
let jpeg: JpegDecoder, png: PngDecoder;
/** Where decodeInto writes, with guard bytes either side checked after each call. */
const target = new Uint8Array(24 << 20);

function check(cond: boolean, what: string): void {
  if (!cond) throw new Error(what);
}

/** The decode an input asks for, and checks on its result that a test would make. */
function call(inp: FuzzInput): void {
  const dec = inp.format === "jpeg" ? jpeg : png;
  if (inp.call === "coefficients") {
    const c = jpeg.decodeCoefficients(inp.bytes, { maxPixels: inp.options.maxPixels });
    for (const comp of c.components) check(comp.coefficients.length === comp.blocksW * comp.blocksH * 64, "coefficients' size");
    return;
  }
  if (inp.call === "into") {
    const at = inp.offset;
    if (at > 0) target[at - 1] = 0xa5;
    const r = dec.decodeInto(inp.bytes, target, at, inp.options);
    const bytes = r.width * r.height * r.channels * ((r.bitDepth ?? 8) / 8);
    check(r.bytes === bytes, `decodeInto wrote ${r.bytes} bytes for ${r.width}×${r.height}×${r.channels}`);
    check(at === 0 || target[at - 1] === 0xa5, "decodeInto wrote before its offset");
    return;
  }
  const img = dec.decode(inp.bytes, inp.options);
  check(img.data.length === img.width * img.height * img.channels * ((img.bitDepth ?? 8) / 8), "output size");
}

scope.onMessage(async (data) => {
  const msg = data as { t: "setup" } & typeof setup | { t: "run"; first: number; end: number };
  if (msg.t === "setup") {
    setup = { ...msg, progress: msg.progress };
    [jpeg, png] = await Promise.all([createJpegDecoder(), createPngDecoder()]);
    scope.postMessage({ t: "ready" });
    return;
  }
  const { seed, formats, jpegs, pngs, maxMs, progress } = setup;
  for (let s = msg.first; s < msg.end;) {
    const e = Math.min(msg.end, (Math.floor(s / SLICE) + 1) * SLICE);
    const format = formatOf(s, formats);
    const tally: FuzzTally = fuzzLoop(e, seed, format === "jpeg" ? JpegError : PngError, maxMs, (i) => {
      Atomics.store(progress, 0, i);
      const inp = makeInput(seed, i, formats, jpegs, pngs);
      return { bytes: inp.bytes, decode: () => call(inp) };
    }, (f) => {
      const inp = makeInput(seed, f.i, formats, jpegs, pngs);
      scope.postMessage({ t: "failure", i: f.i, kind: f.kind, detail: f.detail, did: inp.did, call: inp.call, options: inp.options, offset: inp.offset, format, bytes: f.bytes });
    }, s);
    scope.postMessage({ t: "slice", format, tally: { ...tally, reasons: [...tally.reasons] }, end: e });
    s = e;
  }
  scope.postMessage({ t: "finished" });
});
