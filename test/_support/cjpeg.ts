/** Real JPEGs for tests, made by libjpeg-turbo's cjpeg (Debian's libjpeg-turbo-progs). */
import { spawnSync } from "node:child_process";

/** Encodes grey (1 channel) or RGB (3 channels) pixels with cjpeg. */
export function cjpeg(pixels: Uint8Array, width: number, height: number, channels: 1 | 3, args: string[] = ["-quality", "90"]): Uint8Array {
  const header = new TextEncoder().encode(`${channels === 1 ? "P5" : "P6"}\n${width} ${height}\n255\n`);
  const input = new Uint8Array(header.length + pixels.length);
  input.set(header);
  input.set(pixels, header.length);
  const r = spawnSync("cjpeg", args, { input, maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`cjpeg ${args.join(" ")} failed: ${r.stderr}`);
  return new Uint8Array(r.stdout);
}
