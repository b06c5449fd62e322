/**
 * Real PNG encoders for the PNG decoder's tests, and pypng as the reference decoder:
 *   - pypng (Debian's python3-png): every colour type, bit depths 1–16, Adam7, palettes with
 *     tRNS, a chosen zlib level and IDAT size. One Python process writes (or reads) a whole
 *     batch of images, so a test pays for the interpreter once.
 *   - ImageMagick's `convert`, from raw grey/RGB/RGBA samples.
 * Both go through files in a temporary folder: Deno's spawnSync can stall on large pipes.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type PngColorType, type PngSamples, SAMPLES_PER_PIXEL } from "../reference/png_expect.ts";

/** A pypng Writer's settings for one image beyond its samples. */
export interface PypngOptions {
  interlace?: boolean;
  /** zlib level 0 (stored blocks) … 9; pypng's default when absent. */
  compression?: number;
  /** Bytes of compressed data per IDAT chunk at most (small values: many IDATs). */
  chunkLimit?: number;
}

// Reads a JSON list of jobs. "write": samples (16-bit big-endian, any depth) → a PNG by pypng.
// "read": a PNG → its raw samples (palette indices for colour type 3) and facts, by pypng.
const SCRIPT = String.raw`
import sys, json, array, png
jobs = json.load(open(sys.argv[1]))
def samples(path):
    a = array.array('H'); a.frombytes(open(path, 'rb').read())
    if sys.byteorder == 'little': a.byteswap()
    return a
for j in jobs:
    if j['op'] == 'write':
        w, h, spp = j['width'], j['height'], j['spp']
        s = samples(j['raw'])
        rows = [s[y * w * spp:(y + 1) * w * spp].tolist() for y in range(h)]
        kw = dict(bitdepth=j['bitDepth'], interlace=j['interlace'], chunk_limit=j['chunkLimit'])
        if j['compression'] is not None: kw['compression'] = j['compression']
        ct = j['colorType']
        if ct == 3: kw['palette'] = [tuple(e) for e in j['palette']]
        else:
            kw['greyscale'] = ct in (0, 4)
            kw['alpha'] = ct in (4, 6)
        if j.get('transparent') is not None:
            t = j['transparent']
            kw['transparent'] = tuple(t) if isinstance(t, list) else t
        with open(j['out'], 'wb') as f:
            png.Writer(w, h, **kw).write(f, rows)
    else:
        r = png.Reader(filename=j['in'])
        w, h, rows, info = r.read()
        a = array.array('H')
        for row in rows: a.fromlist(list(row))
        if sys.byteorder == 'little': a.byteswap()
        open(j['raw'], 'wb').write(a.tobytes())
        ct = (2 if not info['greyscale'] else 0) + (4 if info['alpha'] else 0)
        if 'palette' in info: ct = 3
        facts = dict(width=w, height=h, bitDepth=info['bitdepth'], colorType=ct,
                     palette=[list(e) for e in info['palette']] if 'palette' in info else None,
                     transparent=list(info['transparent']) if isinstance(info.get('transparent'), tuple) and len(info['transparent']) > 1 else (info['transparent'][0] if isinstance(info.get('transparent'), tuple) else info.get('transparent')))
        json.dump(facts, open(j['meta'], 'w'))
`;

let python: string | undefined;

/** A Python 3 that can `import png` (Debian's /usr/bin/python3 first: a pyenv one may lack it). */
export function pythonWithPypng(): string {
  if (python) return python;
  for (const exe of ["/usr/bin/python3", "python3"]) {
    const r = spawnSync(exe, ["-c", "import png"], { encoding: "utf8" });
    if (r.status === 0) return (python = exe);
  }
  throw new Error("no python3 with pypng: install Debian's python3-png (tools/setup.sh does)");
}

function runScript(jobs: unknown[], dir: string): void {
  const list = join(dir, "jobs.json");
  writeFileSync(list, JSON.stringify(jobs));
  const r = spawnSync(pythonWithPypng(), ["-c", SCRIPT, list], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`pypng failed: ${r.stderr || r.error}`);
}

function samplesFile(s: Uint16Array): Uint8Array {
  const out = new Uint8Array(s.length * 2);
  for (let i = 0; i < s.length; i++) {
    out[2 * i] = s[i] >> 8;
    out[2 * i + 1] = s[i] & 255;
  }
  return out;
}

/** A scratch folder for encoders; `close()` removes it. */
export class PngWorkshop {
  readonly dir = mkdtempSync(join(tmpdir(), "cassette-png-"));
  #n = 0;

  /** Encodes every image with pypng in one Python run; the files, in order. */
  pypng(images: { img: PngSamples; options?: PypngOptions }[]): Uint8Array[] {
    const jobs = images.map(({ img, options = {} }) => {
      const i = this.#n++;
      const raw = join(this.dir, `w${i}.raw`);
      writeFileSync(raw, samplesFile(img.samples));
      return {
        op: "write", raw, out: join(this.dir, `w${i}.png`),
        width: img.width, height: img.height, spp: SAMPLES_PER_PIXEL[img.colorType], colorType: img.colorType,
        bitDepth: img.bitDepth, palette: img.palette ?? null, transparent: img.transparent ?? null,
        interlace: options.interlace ?? false, compression: options.compression ?? null, chunkLimit: options.chunkLimit ?? 2 ** 20,
      };
    });
    runScript(jobs, this.dir);
    return jobs.map((j) => new Uint8Array(readFileSync(j.out)));
  }

  /** pypng's decoding of each file, as raw samples (the reference decoder). */
  readWithPypng(files: Uint8Array[]): PngSamples[] {
    const jobs = files.map((bytes) => {
      const i = this.#n++;
      const input = join(this.dir, `r${i}.png`);
      writeFileSync(input, bytes);
      return { op: "read", in: input, raw: join(this.dir, `r${i}.raw`), meta: join(this.dir, `r${i}.json`) };
    });
    runScript(jobs, this.dir);
    return jobs.map((j) => {
      const facts = JSON.parse(readFileSync(j.meta, "utf8"));
      const b = readFileSync(j.raw);
      const samples = new Uint16Array(b.length >> 1);
      for (let k = 0; k < samples.length; k++) samples[k] = (b[2 * k] << 8) | b[2 * k + 1];
      return {
        width: facts.width, height: facts.height, colorType: facts.colorType as PngColorType, bitDepth: facts.bitDepth,
        samples, palette: facts.palette ?? undefined, transparent: facts.transparent ?? undefined,
      };
    });
  }

  /**
   * ImageMagick's `convert` from raw samples: `map` "gray", "rgb" or "rgba", `depth` 8 or 16
   * (16-bit input big-endian), `args` what goes before the output (e.g. "-interlace", "PNG"),
   * `out` the output name with its coder prefix ("png:", "PNG8:", "PNG48:").
   */
  imagemagick(samples: Uint16Array, width: number, height: number, map: "gray" | "rgb" | "rgba", depth: 8 | 16, args: string[], out = "png:"): Uint8Array {
    const i = this.#n++;
    const input = join(this.dir, `m${i}.raw`), output = join(this.dir, `m${i}.png`);
    writeFileSync(input, depth === 16 ? samplesFile(samples) : Uint8Array.from(samples));
    const all = ["-size", `${width}x${height}`, "-depth", String(depth), "-endian", "MSB", `${map}:${input}`, ...args, `${out}${output}`];
    const r = spawnSync("convert", all, { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`convert ${all.join(" ")} failed: ${r.stderr || r.error}`);
    return new Uint8Array(readFileSync(output));
  }

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
