/**
 * The native JPEG peer of the decode benchmarks: libjpeg-turbo (Debian's libjpeg62-turbo, SIMD)
 * called in-process from bench/jpeg/turbo_loop.c, built here with cc on first use and again
 * whenever the source is newer than the build. Timed inside its own process; work per second
 * comes back as megapixels (of what the library handed over) per second.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const DIR = fileURLToPath(new URL("../jpeg/", import.meta.url));
let built: string | null | undefined;

/** The built loop, or undefined (the reason printed once) when cc or libjpeg is missing. */
export function turboLoop(): string | undefined {
  if (built !== undefined) return built ?? undefined;
  const exe = `${DIR}build/turbo_loop`, src = `${DIR}turbo_loop.c`;
  if (existsSync(exe) && statSync(exe).mtimeMs >= statSync(src).mtimeMs) return (built = exe);
  mkdirSync(`${DIR}build`, { recursive: true });
  const cc = spawnSync("cc", ["-O2", "-o", exe, src, "-ljpeg"], { encoding: "utf8" });
  if (cc.status !== 0) {
    console.log(`libjpeg-turbo (C) skipped: cc failed (is libjpeg62-turbo-dev installed?)\n${cc.stderr}`);
    built = null;
    return undefined;
  }
  return (built = exe);
}

/**
 * Decodes the jobs `rounds` times: each line a file's path, or "PATH X Y W H DENOM" for a box
 * at scale 1/DENOM (turbo_loop.c). Megapixels per second: best and median round, and the spread.
 */
export function runTurbo(lines: string[], rounds: number, grey = false): { best: number; median: number; spread: number } | undefined {
  const exe = turboLoop();
  if (!exe) return undefined;
  const r = spawnSync(exe, [String(rounds), ...(grey ? ["grey"] : [])], { input: lines.join("\n"), encoding: "utf8", maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`turbo_loop failed: ${r.stderr}`);
  const { seconds, megapixels } = JSON.parse(r.stdout) as { seconds: number[]; megapixels: number };
  const t = seconds.slice().sort((a, b) => a - b);
  return { best: megapixels / t[0], median: megapixels / t[t.length >> 1], spread: (t[t.length - 1] - t[0]) / t[0] };
}
