/**
 * Real JPEGs for tests, made by libjpeg-turbo: its cjpeg (Debian's libjpeg-turbo-progs), and,
 * for the four-component files cjpeg cannot write, its library through
 * test/fixtures/jpeg/cmyk_encode.c (built here with cc against libjpeg62-turbo-dev); and
 * djpeg's decode of any JPEG, the reference the decoder tests compare with.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parsePnm, type Pixels } from "../reference/jpeg_compare.ts";

/** Grey (1 channel) or RGB (3 channels) pixels as a binary PGM or PPM file, which cjpeg reads. */
export function pnm(pixels: Uint8Array, width: number, height: number, channels: 1 | 3): Uint8Array {
  const header = new TextEncoder().encode(`${channels === 1 ? "P5" : "P6"}\n${width} ${height}\n255\n`);
  const file = new Uint8Array(header.length + pixels.length);
  file.set(header);
  file.set(pixels, header.length);
  return file;
}

/**
 * Encodes grey (1 channel) or RGB (3 channels) pixels with cjpeg, through files: Deno's
 * spawnSync stalls on megabytes of piped input.
 */
export function cjpeg(pixels: Uint8Array, width: number, height: number, channels: 1 | 3, args: string[] = ["-quality", "90"]): Uint8Array {
  const file = pnm(pixels, width, height, channels);
  const dir = mkdtempSync(join(tmpdir(), "cassette-cjpeg-"));
  try {
    const input = join(dir, "in.pnm"), output = join(dir, "out.jpg");
    writeFileSync(input, file);
    const r = spawnSync("cjpeg", [...args, "-outfile", output, input], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`cjpeg ${args.join(" ")} failed: ${r.stderr}`);
    return new Uint8Array(readFileSync(output));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let cmykTool: { exe: string; dir: string } | undefined;

/**
 * Encodes RGB pixels as an Adobe CMYK (`cmyk`) or YCCK (`ycck`) JPEG with libjpeg-turbo, the
 * inverted CMYK chosen so that R = C·K/255 gives the pixels back; `sampling` is K's (and in
 * YCCK Y's) factors, e.g. "2x2", the other components 1×1.
 */
export function cmykJpeg(rgb: Uint8Array, width: number, height: number, mode: "cmyk" | "ycck", quality: number, sampling: string): Uint8Array {
  if (!cmykTool) {
    const dir = mkdtempSync(join(tmpdir(), "cassette-cmyk-"));
    const exe = join(dir, "cmyk_encode");
    const src = fileURLToPath(new URL("../fixtures/jpeg/cmyk_encode.c", import.meta.url));
    const cc = spawnSync("cc", ["-O2", "-o", exe, src, "-ljpeg"], { encoding: "utf8" });
    if (cc.status !== 0 || !existsSync(exe)) {
      throw new Error(`cannot build ${src} (tools/setup.sh installs gcc and libjpeg62-turbo-dev): ${cc.stderr ?? cc.error}`);
    }
    cmykTool = { exe, dir };
  }
  // Through files: Deno's spawnSync can stall on large piped data.
  const ppm = join(cmykTool.dir, "in.ppm"), out = join(cmykTool.dir, "out.jpg");
  writeFileSync(ppm, pnm(rgb, width, height, 3));
  const r = spawnSync(cmykTool.exe, [mode, String(quality), sampling, ppm, out], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`cmyk_encode ${mode} ${quality} ${sampling} failed: ${r.stderr}`);
  return new Uint8Array(readFileSync(out));
}

/** Removes the encoder built by cmykJpeg (call from afterAll). */
export function removeCmykTool(): void {
  if (cmykTool) rmSync(cmykTool.dir, { recursive: true, force: true });
  cmykTool = undefined;
}

/**
 * djpeg's pixels for `bytes` with `args` (e.g. ["-grayscale"], ["-scale", "1/2"]), through
 * files in `dir`: Deno's spawnSync can stall with a large output behind piped input.
 */
export function djpeg(bytes: Uint8Array, args: string[], dir: string): Pixels {
  const input = join(dir, "djpeg-in.jpg"), output = join(dir, "djpeg-out.pnm");
  writeFileSync(input, bytes);
  const all = ["-pnm", ...args, "-outfile", output, input];
  const r = spawnSync("djpeg", all, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`djpeg ${all.join(" ")} failed: ${r.stderr}`);
  return parsePnm(new Uint8Array(readFileSync(output)));
}

/** RGB pixels to grey as libjpeg does (jccolor.c's rgb_gray: 16-bit weights, rounded). */
export function rgbToGrey(rgb: Pixels): Pixels {
  const grey = new Uint8Array(rgb.width * rgb.height);
  for (let i = 0; i < grey.length; i++) {
    grey[i] = (19595 * rgb.data[3 * i] + 38470 * rgb.data[3 * i + 1] + 7471 * rgb.data[3 * i + 2] + 32768) >> 16;
  }
  return { width: rgb.width, height: rgb.height, channels: 1, data: grey };
}
