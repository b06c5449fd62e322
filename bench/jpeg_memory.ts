/**
 * Wasm memory the JPEG decoder holds after a group of files, per output mode, for two builds
 * side by side: a fresh instance of each build per (group, mode) decodes every file of the group,
 * and its memory's size afterwards is the high-water mark (wasm memory only grows). Also checks
 * that both builds hand out the same pixels (a hash of every row emitted).
 *
 *   node_modules/.bin/bun bench/jpeg_memory.ts --a /tmp/base.wasm [--b wasm/build/jpeg.wasm] [--only progressive,large]
 *
 * Groups: bench/jpeg/make_inputs.sh's (crops, large, progressive, gray), the progressive files
 * of the test corpus (test/fixtures/jpeg/*prog*.jpg) as "fixtures-prog", and the whole corpus as
 * "fixtures" (pixels compared; files refused count by their error code).
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { benchArgs } from "./_lib/args.ts";

const args = benchArgs({
  program: "bench/jpeg_memory.ts",
  usage: `usage: bun bench/jpeg_memory.ts --a A.wasm [--b B.wasm] [--only LIST]

  Decodes each group's files with a fresh instance of each build per output mode (RGB, grey,
  1/2, 1/4, 1/8, grey 1/8) and prints the wasm memory each instance holds afterwards, in MiB.

  --a A.wasm    the baseline build (e.g. a copy of wasm/build/jpeg.wasm before a change)
  --b B.wasm    the build to compare (default wasm/build/jpeg.wasm)
  --only LIST   comma-separated groups: progressive, fixtures-prog, fixtures, large, gray, crops`,
  valued: ["a", "b", "only"],
});
const HERE = fileURLToPath(new URL("./", import.meta.url));
const pathA = args.str("a") ?? args.fail("needs --a A.wasm");
const pathB = args.str("b", `${HERE}../wasm/build/jpeg.wasm`);
const GROUPS = ["progressive", "fixtures-prog", "fixtures", "large", "gray", "crops"];
const only = (args.str("only") ?? "progressive,fixtures-prog,large").split(",");
for (const g of only) if (!GROUPS.includes(g)) args.fail(`--only takes ${GROUPS.join(", ")}: current value has ${g}`);

execFileSync("bash", [`${HERE}jpeg/make_inputs.sh`], { stdio: "inherit" });

const MODE_PIXELS = 0, MODE_GREY = 2;
const CASES: { name: string; scale: number; mode: number }[] = [
  { name: "RGB", scale: 0, mode: MODE_PIXELS },
  { name: "grey", scale: 0, mode: MODE_GREY },
  { name: "1/2", scale: 1, mode: MODE_PIXELS },
  { name: "1/4", scale: 2, mode: MODE_PIXELS },
  { name: "1/8", scale: 3, mode: MODE_PIXELS },
  { name: "grey 1/8", scale: 3, mode: MODE_GREY },
];

/** A fresh instance of the build at `path` decodes `inputs`; returns its memory's size and a pixel hash. */
async function measure(path: string, inputs: Uint8Array[], scale: number, mode: number): Promise<{ bytes: number; hash: number }> {
  // deno-lint-ignore no-explicit-any
  let w: any;
  let hash = 0x811c9dc5;
  const inst = await WebAssembly.instantiate(await WebAssembly.compile(readFileSync(path)), {
    env: {
      rows(ptr: number, _y0: number, n: number) {
        const bytes = new Uint8Array(w.memory.buffer, ptr, n * w.outWidth() * w.outChannels());
        for (let i = 0; i < bytes.length; i++) hash = Math.imul(hash ^ bytes[i], 16777619);
      },
      abort() {
        throw new Error(`${path} aborted`);
      },
    },
  });
  w = inst.exports;
  for (const x of inputs) {
    w.reset();
    const p = w.alloc(x.length);
    new Uint8Array(w.memory.buffer, p, x.length).set(x);
    // A file either build refuses (the corpus has some) counts by its error code.
    hash = Math.imul(hash ^ w.decode(p, x.length, scale, 1e9, mode), 16777619);
  }
  return { bytes: w.memory.buffer.byteLength, hash };
}

function files(group: string): string[] {
  const dir = group.startsWith("fixtures") ? `${HERE}../test/fixtures/jpeg/` : `${HERE}jpeg/data/${group}/`;
  return readdirSync(dir).filter((f) => f.endsWith(".jpg") && (group !== "fixtures-prog" || f.includes("prog"))).sort().map((f) => dir + f);
}

const mib = (b: number) => (b / 2 ** 20).toFixed(1);
console.log(`A = ${pathA}\nB = ${pathB}\nwasm memory after each group (fresh instance per group and mode), MiB\n`);
console.log("| group | mode | A MiB | B MiB | B ÷ A | same pixels |\n|---|---|---:|---:|---:|---|");
for (const group of only) {
  const inputs = files(group).map((f) => new Uint8Array(readFileSync(f)));
  for (const c of CASES) {
    const a = await measure(pathA, inputs, c.scale, c.mode);
    const b = await measure(pathB, inputs, c.scale, c.mode);
    const same = a.hash === b.hash ? "yes" : "**NO**";
    console.log(`| ${group} (${inputs.length}) | ${c.name} | ${mib(a.bytes)} | ${mib(b.bytes)} | ${(b.bytes / a.bytes).toFixed(2)} | ${same} |`);
  }
}
