/**
 * Paired A/B of two builds of the JPEG decoder's wasm (wasm/build/jpeg.wasm) in one process:
 * each round decodes every group's inputs with A, then with B (the order alternates round by
 * round), timing process CPU time, so that the machine's noise falls on both alike. Prints, per
 * group, the median paired ratio time(A) ÷ time(B) (above 1: B is faster) with its interquartile
 * range, and checks that A and B hand out the same pixels (a hash of every row they emit).
 *
 *   node_modules/.bin/bun bench/jpeg_ab.ts --a /tmp/base.wasm [--b wasm/build/jpeg.wasm] [--rounds 15] [--only crops,large] [--scale 1]
 *
 * Inputs: bench/jpeg/make_inputs.sh's groups (crops, large, progressive, gray) and 2000
 * Fashion-MNIST 28×28 as ingest stores them, decoded grey (fmnist-grey), as bench/jpeg.bench.ts.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { benchArgs } from "./_lib/args.ts";

const args = benchArgs({
  program: "bench/jpeg_ab.ts",
  usage: `usage: bun bench/jpeg_ab.ts --a A.wasm [--b B.wasm] [--rounds R] [--only LIST]

  Decodes the JPEG bench's groups with two builds of the decoder's wasm in one process,
  alternating, and prints the median paired ratio of process CPU time A ÷ B per group
  (above 1: B is faster), its interquartile range, and whether both gave the same pixels.

  --a A.wasm    the baseline build (e.g. a copy of wasm/build/jpeg.wasm before a change)
  --b B.wasm    the build to compare (default wasm/build/jpeg.wasm)
  --rounds R    paired rounds (default 15)
  --only LIST   comma-separated groups: crops, large, progressive, gray, fmnist-grey
  --scale S     decode at 1/2^S of the size, S = 0…3 (default 0: full size)`,
  valued: ["a", "b", "rounds", "only", "scale"],
});
const HERE = fileURLToPath(new URL("./", import.meta.url));
const pathA = args.str("a") ?? args.fail("needs --a A.wasm");
const pathB = args.str("b", `${HERE}../wasm/build/jpeg.wasm`);
const ROUNDS = args.int("rounds", 15);
const SCALE = args.int("scale", 0, 0);
if (SCALE > 3) args.fail(`--scale must be 0…3: current value is ${SCALE}`);
const GROUPS = ["crops", "large", "progressive", "gray", "fmnist-grey"];
const only = (args.str("only") ?? GROUPS.join(",")).split(",");
for (const g of only) if (!GROUPS.includes(g)) args.fail(`--only takes ${GROUPS.join(", ")}: current value has ${g}`);

execFileSync("bash", [`${HERE}jpeg/make_inputs.sh`], { stdio: "inherit" });

interface Build {
  decode(bytes: Uint8Array, mode: number): void;
  hash: number;
}

/** One instance of a build; its row sink folds every row into `hash` (FNV-1a on 32-bit words). */
async function load(path: string): Promise<Build> {
  // deno-lint-ignore no-explicit-any
  let w: any;
  const b: Build = {
    hash: 0x811c9dc5,
    decode(bytes, mode) {
      w.reset();
      const p = w.alloc(bytes.length);
      new Uint8Array(w.memory.buffer, p, bytes.length).set(bytes);
      const rc = w.decode(p, bytes.length, SCALE, 1e9, mode);
      if (rc !== 0) throw new Error(`${path}: decode failed with code ${rc}`);
    },
  };
  const inst = await WebAssembly.instantiate(await WebAssembly.compile(readFileSync(path)), {
    env: {
      rows(ptr: number, _y0: number, n: number) {
        const bytes = n * w.outWidth() * w.outChannels();
        const words = new Int32Array(w.memory.buffer, ptr, bytes >> 2);
        let h = b.hash;
        for (let i = 0; i < words.length; i++) h = Math.imul(h ^ words[i], 16777619);
        const tail = new Uint8Array(w.memory.buffer, ptr + (bytes & ~3), bytes & 3);
        for (let i = 0; i < tail.length; i++) h = Math.imul(h ^ tail[i], 16777619);
        b.hash = h;
      },
      abort() {
        throw new Error(`${path} aborted`);
      },
    },
  });
  w = inst.exports;
  return b;
}

function files(group: string): string[] {
  if (group === "fmnist-grey") return [];
  const dir = `${HERE}jpeg/data/${group}/`;
  return readdirSync(dir).filter((f) => f.endsWith(".jpg")).sort().map((f) => dir + f);
}

async function fmnist(): Promise<Uint8Array[]> {
  const idx = "/usr/share/datasets/fashion-mnist/";
  if (!existsSync(idx)) return [];
  const dir = `${HERE}jpeg/data/fmnist/`;
  mkdirSync(dir, { recursive: true });
  const out: Uint8Array[] = [];
  let train: { images: Uint8Array } | undefined;
  for (let i = 0; i < 2000; i++) {
    const name = `${dir}${String(i).padStart(4, "0")}.jpg`;
    if (!existsSync(name)) {
      if (!train) {
        const { readIdxDataset } = await import("../src/dataset/idx.ts");
        train = (await readIdxDataset(idx))[0];
      }
      const { encodeGrey } = await import("../src/dataset/ingest.ts");
      writeFileSync(name, encodeGrey(train.images.subarray(i * 784, (i + 1) * 784), 28, 28, 90));
    }
    out.push(new Uint8Array(readFileSync(name)));
  }
  return out;
}

const A = await load(pathA);
const B = await load(pathB);
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const q = (xs: number[], f: number) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.round(f * (s.length - 1))))];
};

console.log(`A = ${pathA}\nB = ${pathB}\n${ROUNDS} paired rounds at scale 1/${1 << SCALE}, process CPU time; ratio A ÷ B above 1: B is faster\n`);
console.log("| group | A ms/round (median) | B ms/round (median) | A ÷ B median (IQR) | same pixels |\n|---|---:|---:|---:|---|");
for (const group of only) {
  const inputs = group === "fmnist-grey" ? await fmnist() : files(group).map((f) => new Uint8Array(readFileSync(f)));
  if (inputs.length === 0) {
    console.log(`| ${group} | — | — | no inputs | — |`);
    continue;
  }
  const mode = group === "fmnist-grey" ? 2 : 0;
  // Decoding in its own loop keeps the inputs that small images need many of per timing.
  const reps = group === "fmnist-grey" ? 5 : group === "crops" ? 2 : 1;
  const run = (b: Build) => {
    const t0 = cpu();
    for (let r = 0; r < reps; r++) for (const x of inputs) b.decode(x, mode);
    return cpu() - t0;
  };
  run(A); // warm both (JIT tiers)
  run(B);
  A.hash = B.hash = 0x811c9dc5;
  const ta: number[] = [], tb: number[] = [], ratio: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    let a: number, b: number;
    if (i % 2 === 0) {
      a = run(A);
      b = run(B);
    } else {
      b = run(B);
      a = run(A);
    }
    ta.push(a);
    tb.push(b);
    ratio.push(a / b);
  }
  const same = A.hash === B.hash ? "yes" : `**NO** (${(A.hash >>> 0).toString(16)} vs ${(B.hash >>> 0).toString(16)})`;
  console.log(`| ${group} | ${q(ta, 0.5).toFixed(1)} | ${q(tb, 0.5).toFixed(1)} | **${q(ratio, 0.5).toFixed(3)}×** (${q(ratio, 0.25).toFixed(3)}–${q(ratio, 0.75).toFixed(3)}) | ${same} |`);
}
