/** Pieces two or more adapters share (kept here so each adapter file holds only its differences). */
import { pathToFileURL } from "node:url";
import type { SqliteDatabase, SqliteStatement, SqliteValue } from "./runtime.ts";

/** SQLite's URI for reading `path` as an immutable file (node:sqlite and bun:sqlite both take it). */
export function immutableUri(path: string): string {
  return `${pathToFileURL(path).href}?immutable=1`;
}

/** The warning Node 22 prints the first time each thread loads node:sqlite. */
const SQLITE_WARNING = /^SQLite is an experimental feature/;

/**
 * node:sqlite, loaded on first use (getBuiltinModule keeps it unloaded until a store is
 * opened). Node 22 prints "ExperimentalWarning: SQLite is an experimental feature …" once per
 * thread that loads it, every read worker included: that one warning is dropped, so stderr
 * keeps what the user needs; every other warning goes through.
 */
function loadNodeSqlite(): { DatabaseSync: any } {
  const proc = (globalThis as any).process;
  const emit = proc.emitWarning;
  if (typeof emit !== "function") return proc.getBuiltinModule("node:sqlite");
  proc.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const message = typeof warning === "string" ? warning : warning?.message;
    const type = typeof rest[0] === "string" ? rest[0] : (rest[0] as { type?: string } | undefined)?.type ?? (warning as Error)?.name;
    if (type === "ExperimentalWarning" && SQLITE_WARNING.test(String(message))) return;
    return emit.call(this, warning, ...rest);
  };
  try {
    return proc.getBuiltinModule("node:sqlite");
  } finally {
    proc.emitWarning = emit;
  }
}

/** node:sqlite's DatabaseSync (Node ≥ 22 and Deno) behind the common interface. */
export function nodeSqlite(path: string, options: { immutable?: boolean } = {}): SqliteDatabase {
  const { DatabaseSync } = loadNodeSqlite();
  const db = options.immutable ? new DatabaseSync(immutableUri(path), { readOnly: true }) : new DatabaseSync(path);
  return {
    exec: (sql) => db.exec(sql),
    prepare(sql): SqliteStatement {
      const st = db.prepare(sql);
      st.setReadBigInts?.(false);
      return {
        run: (...p: SqliteValue[]) => ({ changes: Number(st.run(...p).changes) }),
        all: (...p: SqliteValue[]) => st.all(...p),
        get: (...p: SqliteValue[]) => st.get(...p) ?? undefined,
      };
    },
    close: () => db.close(),
  };
}

// The web Worker pieces live in _web.ts (the browser adapter uses them without node:url).
export { READY, webWorker, webWorkerScope } from "./_web.ts";

export function toPath(p: string | URL): string {
  return typeof p === "string" ? p : decodeURIComponent(p.pathname);
}

/**
 * The machine's CPU time so far, summed over its cores (node:os, which all three runtimes
 * offer): the decode pool's scaler reads idle cores from the difference of two calls. Zero
 * totals where the runtime does not report times (the scaler then goes by its workers' own use).
 */
/**
 * The calling thread's CPU time so far in ms (Linux: /proc/thread-self/schedstat, ns; every
 * runtime's workers are threads of their own), or NaN where that file is not: how busy a read
 * worker was, for the scaler (src/decode/scaler.ts).
 */
export function threadCpuMs(): number {
  try {
    const { readFileSync } = (globalThis as any).process.getBuiltinModule("node:fs");
    return Number(String(readFileSync("/proc/thread-self/schedstat", "utf8")).split(" ")[0]) / 1e6;
  } catch {
    return Number.NaN;
  }
}

export function cpuTimes(): { cores: number; idleMs: number; totalMs: number } {
  const { cpus } = (globalThis as any).process.getBuiltinModule("node:os");
  const list = cpus() as { times: Record<string, number> }[];
  let idleMs = 0, totalMs = 0;
  for (const c of list) {
    for (const k in c.times) totalMs += c.times[k];
    idleMs += c.times.idle;
  }
  return { cores: Math.max(1, list.length), idleMs, totalMs };
}

/**
 * Writes `data` beside `path` and renames it over `path` (node:fs/promises, which all three
 * runtimes offer): a run killed mid-write keeps the last whole file.
 */
export async function replaceFile(path: string | URL, data: Uint8Array): Promise<void> {
  const proc = (globalThis as any).process;
  const { writeFile, rename } = proc.getBuiltinModule("node:fs/promises");
  const target = toPath(path);
  const tmp = `${target}.${proc.pid}.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, target);
}
