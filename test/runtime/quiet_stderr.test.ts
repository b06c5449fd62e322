/**
 * stderr holds what the user needs: the runtime adapters drop the two notices every run used to
 * print (issue 38), and only those. Run as a user runs the CLI: under Node without the
 * --disable-warning flag runtime.scriptCommand adds, since dist/cli/main.js's `#!/usr/bin/env
 * node` does not add it either.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { runtime } from "../../runtime-adapters/index.ts";

/** The CLI as a user starts it: Node with its hooks only, the others as scriptCommand says. */
function cassetteAsUser(...args: string[]) {
  const [cmd, ...pre] = runtime.name === "node"
    ? [process.execPath, "--import", new URL("../../runtime-adapters/node_hooks.mjs", import.meta.url).pathname, "src/cli/main.ts", ...args]
    : runtime.scriptCommand("src/cli/main.ts", args);
  return spawnSync(cmd, pre, { encoding: "utf8", timeout: 120_000 });
}

test("a read in 2 worker threads of a SQLite store prints no SQLite ExperimentalWarning, in any thread", () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-quiet-"));
  try {
    const rows = ["path,label"];
    for (let i = 0; i < 4; i++) {
      writeFileSync(join(dir, `${i}.jpg`), cjpeg(new Uint8Array(64).fill(40 * i), 8, 8, 1));
      rows.push(`${i}.jpg,${i % 2}`);
    }
    writeFileSync(join(dir, "m.csv"), rows.join("\n") + "\n");
    const store = `sqlite:${join(dir, "s.sqlite")}`;
    const ing = cassetteAsUser("ingest", join(dir, "m.csv"), "--store", store, "--dataset", "q", "--json");
    assert.is(ing.status, 0, ing.stderr);
    const read = cassetteAsUser("read", "--store", store, "--dataset", "q", "--workers", "2", "--batch", "2", "--json");
    assert.is(read.status, 0, read.stderr);
    assert.is(JSON.parse(read.stdout).samples, 4);
    for (const r of [ing, read]) assert.not.match(r.stderr, /ExperimentalWarning|SQLite is an experimental feature/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("other warnings still reach stderr while node:sqlite loads", async () => {
  // The filter is in place only while node:sqlite loads, and drops that one message only.
  const { nodeSqlite } = await import("../../runtime-adapters/_shared.ts");
  const seen: string[] = [];
  const onWarning = (w: Error) => seen.push(`${w.name}: ${w.message}`);
  const proc = (globalThis as { process?: { on?: (e: string, f: (w: Error) => void) => void; off?: (e: string, f: (w: Error) => void) => void; emitWarning?: (m: string, t: string) => void } }).process;
  if (!proc?.emitWarning || !proc.on) return; // no process.emitWarning (Bun uses bun:sqlite anyway)
  proc.on("warning", onWarning);
  try {
    const dir = mkdtempSync(join(tmpdir(), "cassette-quiet-"));
    try {
      nodeSqlite(join(dir, "a.sqlite")).close();
      proc.emitWarning("a warning of the user's", "ExperimentalWarning");
      await new Promise((r) => setTimeout(r, 0)); // warnings are delivered on the next tick
      assert.ok(seen.includes("ExperimentalWarning: a warning of the user's"), JSON.stringify(seen));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    proc.off?.("warning", onWarning);
  }
});

test("opening a GPU device prints none of Dawn's limit notices under Bun and Deno; what the program writes still shows", () => {
  const [cmd, ...pre] = runtime.scriptCommand("test/runtime/_open_device.ts");
  const r = spawnSync(cmd, pre, { encoding: "utf8", timeout: 120_000 });
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stderr, /^opened a device$/m);
  // Node has no FFI to point file descriptor 2 elsewhere while Dawn writes there (NOTE [ Dawn's
  // limit notices ] in runtime-adapters/deno.ts): there they still print.
  if (runtime.name !== "node") assert.not.match(r.stderr, /artificially reduced/);
});
