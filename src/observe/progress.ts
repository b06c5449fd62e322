/**
 * A progress line for long work: count, rate and ETA, redrawn in place on a terminal and
 * printed at most every 10 % (and at the end) otherwise, so logs stay short. Writes to stderr:
 * stdout stays clean for --json.
 */
import { runtime } from "../../runtime-adapters/index.ts";

export interface Progress {
  /** `extra` may be a function: it is called only when the line is drawn (a hot loop need not build it each time). */
  update(done: number, extra?: string | (() => string)): void;
  done(extra?: string): void;
}

/** `startedAt`: when the work began (runtime.now() units), if before this call. */
export function progress(label: string, total: number, quiet = false, startedAt = runtime.now()): Progress {
  const err = (globalThis as { process?: { stderr?: { isTTY?: boolean; write(s: string): void } } }).process?.stderr;
  const tty = !!err?.isTTY;
  const t0 = startedAt;
  let lastDecile = -1, lastDraw = 0, last = "";
  const line = (done: number, more: string | (() => string) = "") => {
    const extra = typeof more === "function" ? more() : more;
    const s = (runtime.now() - t0) / 1000;
    const rate = done / Math.max(s, 1e-9);
    const eta = rate > 0 && total > done ? ` · ETA ${fmtTime((total - done) / rate)}` : "";
    const pct = total > 0 ? ` ${((100 * done) / total).toFixed(0)}%` : "";
    return `${label} ${done}/${total}${pct} · ${rate.toFixed(0)}/s${eta}${extra ? ` · ${extra}` : ""}`;
  };
  return {
    update(done, extra) {
      if (quiet || !err) return;
      if (tty) {
        if (runtime.now() - lastDraw < 100) return;
        lastDraw = runtime.now();
        last = line(done, extra);
        err.write(`\r${last}\x1b[K`);
      } else {
        const decile = Math.floor((10 * done) / Math.max(total, 1));
        if (decile > lastDecile) {
          lastDecile = decile;
          err.write(`${line(done, extra)}\n`);
        }
      }
    },
    done(extra) {
      if (quiet || !err) return;
      err.write(`${tty ? "\r" : ""}${line(total, extra)} · ${fmtTime((runtime.now() - t0) / 1000)}${tty ? "\x1b[K" : ""}\n`);
    },
  };
}

function fmtTime(s: number): string {
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}
