/**
 * Atomicity: an ingest killed (SIGKILL) in the middle leaves no metadata row without its data
 * row, and running it again completes the dataset with nothing lost or duplicated.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { startCassette } from "../_support/cli.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { openStore } from "../../src/source/open.ts";
import { tables } from "../../src/dataset/schema.ts";
import { CassandraStore } from "../../src/source/cassandra.ts";
import { ingest } from "../../src/dataset/ingest.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-kill-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const LIMIT = 1500; // per idx split: 3000 samples (enough chunks of 512 to be killed between)
const SOURCE = "idx:/usr/share/datasets/fashion-mnist/";

/** Starts an ingest in a child process and kills it after it has written some chunks. */
function ingestAndKill(store: string, dataset: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = startCassette("ingest", SOURCE, "--store", store, "--dataset", dataset, "--limit", String(LIMIT));
    let err = "";
    child.stderr.on("data", (d) => {
      err += d;
      // Non-TTY progress prints a line per 10 %: kill after the second one.
      if ((err.match(/^ingest \d+\/\d+/gm) ?? []).length >= 2) child.kill("SIGKILL");
    });
    child.on("close", (code, signal) => (signal === "SIGKILL" ? resolve() : reject(new Error(`ingest was not killed (exit ${code}): ${err}`))));
  });
}

async function counts(address: string, dataset: string): Promise<number[]> {
  const t = tables(dataset);
  const store = await openStore(address);
  try {
    if (store instanceof CassandraStore) {
      const n = [];
      for (const table of [t.data, t.byUuid, t.byNat]) {
        n.push(Number((await store.client.execute(`SELECT count(*) AS n FROM ${store.keyspace}.${table}`)).first().n));
      }
      return n;
    }
  } finally {
    await store.close();
  }
  const db = runtime.openSqlite(address.slice("sqlite:".length));
  try {
    return [t.data, t.byUuid, t.byNat].map((table) => Number(db.prepare(`SELECT count(*) AS n FROM "${table}"`).get()!.n));
  } finally {
    db.close();
  }
}

async function killAndResume(address: string, dataset: string) {
  await ingestAndKill(address, dataset);
  const after = await counts(address, dataset);
  assert.ok(after[0] > 0 && after[0] < 2 * LIMIT, `killed part-way: ${after[0]} stored`);
  assert.equal(after, [after[0], after[0], after[0]], "every sample has its data row and both metadata rows");
  const store = await openStore(address);
  try {
    const resumed = await ingest(store, SOURCE, { dataset, limit: LIMIT });
    assert.is(resumed.existing, after[0], "what was stored is recognised");
    assert.is(resumed.written, 2 * LIMIT - after[0], "the rest is written");
  } finally {
    await store.close();
  }
  assert.equal(await counts(address, dataset), [2 * LIMIT, 2 * LIMIT, 2 * LIMIT]);
}

test("SQLite: a killed ingest leaves whole samples only, and a re-run completes it exactly", async () => {
  await killAndResume(`sqlite:${join(dir, "kill.sqlite")}`, "fm");
}, { timeoutMs: 240_000 });

test("Cassandra: a killed ingest leaves whole samples only, and a re-run completes it exactly", async () => {
  await killAndResume(testCassandra("cassette_kill")!, `fm-${runtime.name}-${Date.now() % 1e8}`);
}, { skip: NO_CASSANDRA, timeoutMs: 240_000 });
