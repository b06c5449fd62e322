/**
 * One suite for every Store, so that no store is held to less than another: SQLite and
 * Cassandra pass the same cases, in every runtime. Cassandra's cases are skipped with a reason
 * only when the suite runs without it.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { assertAsStored, expectError } from "../_support/expect.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { openStore, type OpenStoreOptions } from "../../src/source/open.ts";
import { openCassandra } from "../../src/source/cassandra/cassandra_client.ts";
import { parseStoreAddress } from "../../src/source/kinds.ts";
import type { SampleInput, Store } from "../../src/dataset/store.ts";
import type { Fetched } from "../../src/source/source.ts";
import { openReadSource } from "../../src/read/open.ts";
import type { DatasetSpec } from "../../src/dataset/spec.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import { tables } from "../../src/dataset/schema.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../../src/errors.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-store-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A unique dataset per run: Cassandra keyspaces outlive a test run.
const run = `${runtime.name}-${(runtime.now() * 1000).toFixed(0).slice(-9)}`;

/** Whether the Cassandra keyspace of `address` exists, asked as the superuser. */
async function keyspaceExists(address: string): Promise<boolean> {
  const { keyspace } = parseStoreAddress(address) as { keyspace: string };
  const admin = await openCassandra(address, { withoutKeyspace: true });
  try {
    return (await admin.execute("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?", [keyspace])).rowLength > 0;
  } finally {
    await admin.shutdown();
  }
}

const stores: {
  name: string;
  skip: string | false;
  open: (options?: OpenStoreOptions) => Promise<Store>;
  /** An address where no store is, and whether something is there now. */
  missing: string;
  exists: (address: string) => Promise<boolean>;
}[] = [
  {
    name: "sqlite", skip: false, open: (o) => openStore(`sqlite:${join(dir, "conf.sqlite")}`, o),
    missing: `sqlite:${join(dir, "no-folder", "none.sqlite")}`, exists: async (a) => existsSync(dirname(a.slice("sqlite:".length))),
  },
  {
    name: "cassandra", skip: NO_CASSANDRA, open: (o) => openStore(testCassandra("cassette_conf")!, o),
    missing: testCassandra(`cassette_absent_${run.replace(/\W/g, "_")}`) ?? "", exists: keyspaceExists,
  },
];

const spec = (name: string): DatasetSpec => ({
  version: 1,
  name,
  columns: [{ name: "patient", type: "text" }, { name: "slide", type: "int" }, { name: "x", type: "float" }],
  groupBy: ["patient"],
  label: { kind: "int" },
});

for (const s of stores) {
  test(`${s.name}: random blobs and labels round trip, in the order asked; metadata scans typed`, async () => {
    const store = await s.open();
    try {
      const name = `rt-${run}`;
      await store.createDataset(spec(name));
      const seed = freshSeed();
      const next = rng(seed);
      const samples: SampleInput[] = Array.from({ length: 120 }, (_, i) => ({
        key: `p${i % 7}/s${i}.jpg`,
        label: randomInt(next, 0, 4),
        data: randomBytes(next, randomInt(next, 0, 30_000)),
        meta: { patient: `P${i % 7}`, slide: i, x: i / 3 },
      }));
      assert.equal(await store.put(name, samples), { written: 120, existing: 0 });
      const ids = samples.map((x) => sampleId(name, x.key)).reverse();
      const got = await store.get(name, ids);
      got.forEach((g, i) => {
        const want = samples[119 - i];
        assert.is(g.id, ids[i]);
        assert.is(g.label, want.label, `label of ${want.key} (seed ${seed})`);
        assert.ok(g.data.length === want.data.length && g.data.every((b, k) => b === want.data[k]), `bytes of ${want.key} (seed ${seed})`);
      });
      const rows = [];
      for await (const page of store.scanNat(name)) rows.push(...page);
      assert.is(rows.length, 120);
      const byId = new Map(rows.map((r) => [r.id, r]));
      for (const x of samples) {
        const r = byId.get(sampleId(name, x.key))!;
        assert.ok(r, `nat row of ${x.key}`);
        assert.equal(r.meta, x.meta);
        assert.is(r.label, x.label);
      }
      const info = await store.info(name);
      assert.is(info.count, 120);
      assert.is(info.bytes, samples.reduce((n, x) => n + x.data.length, 0));
      assert.is(Object.values(info.perLabel).reduce((a, b) => a + b, 0), 120);
      assert.ok((await store.listDatasets()).some((d) => d.name === name));
    } finally {
      await store.close();
    }
  }, { skip: s.skip, timeoutMs: 120_000 });

  test(`${s.name}: writing twice stores once; existing() finds exactly what is stored`, async () => {
    const store = await s.open();
    try {
      const name = `idem-${run}`;
      await store.createDataset(spec(name));
      await store.createDataset(spec(name)); // the same schema again: a no-op
      const samples = [0, 1, 2].map((i) => ({ key: `k${i}`, label: i, data: new Uint8Array([i, 1]), meta: { patient: "P" } }));
      assert.equal(await store.put(name, samples), { written: 3, existing: 0 });
      assert.equal(await store.put(name, samples), { written: 0, existing: 3 });
      assert.is((await store.info(name)).count, 3);
      const ids = ["k0", "k9"].map((k) => sampleId(name, k));
      assert.equal([...await store.existing(name, ids)], [ids[0]]);
    } finally {
      await store.close();
    }
  }, { skip: s.skip, timeoutMs: 120_000 });

  test(`${s.name}: bad samples, unknown datasets, clashing schemas and missing ids give clear errors; nothing half-written`, async () => {
    const store = await s.open();
    try {
      const name = `bad-${run}`;
      await store.createDataset(spec(name));
      const good = { key: "good", label: 1, data: new Uint8Array([1]), meta: { patient: "P1" } };
      await expectError(store.put(name, [good, { key: "float", label: 1.5, data: new Uint8Array(1), meta: { patient: "P" } }]), "ERR_INVALID_OPTION", /'float'.*label/);
      await expectError(store.put(name, [good, { key: "col", label: 1, data: new Uint8Array(1), meta: { patient: "P", colour: "red" } }]), "ERR_INVALID_OPTION", /'colour' is not a column/);
      await expectError(store.put(name, [good, { key: "nogroup", label: 1, data: new Uint8Array(1), meta: {} }]), "ERR_INVALID_OPTION", /'nogroup'.*group column 'patient'/);
      await expectError(store.put(name, [{ key: "type", label: 1, data: new Uint8Array(1), meta: { patient: "P", slide: "one" } }]), "ERR_INVALID_OPTION", /'slide' is int/);
      assert.is((await store.info(name)).count, 0, "the good sample of each failed call is not stored either");
      await expectError(store.get(name, [sampleId(name, "good")]), "ERR_STORE", new RegExp(sampleId(name, "good")));
      await expectError(store.getDataset(`nope-${run}`), "ERR_STORE", new RegExp(`nope-${run}.*${name}`));
      await expectError(store.createDataset({ ...spec(name), groupBy: [] }), "ERR_INVALID_OPTION", /exists with another schema/);
      await expectError(store.createDataset({ ...spec(`x-${run}`), groupBy: ["slde"] }), "ERR_INVALID_OPTION", /group column 'slde'/);
      // A spec written by hand in JSON or plain JS may leave a list out.
      const { groupBy: _g, ...noGroupBy } = spec(`y-${run}`);
      await expectError(store.createDataset(noGroupBy as DatasetSpec), "ERR_INVALID_OPTION", /'groupBy' must be an array.*undefined/);
      await expectError(store.createDataset({ ...spec(`y-${run}`), columns: "patient" as unknown as DatasetSpec["columns"] }), "ERR_INVALID_OPTION", /'columns' must be an array/);
    } finally {
      await store.close();
    }
  }, { skip: s.skip, timeoutMs: 120_000 });
}

for (const s of stores) {
  test(`${s.name}: a reader (create: false) names a store that is not there and makes nothing; it opens one that is`, async () => {
    await expectError(openStore(s.missing, { create: false }), "ERR_STORE", /does not exist|no such file/);
    assert.not.ok(await s.exists(s.missing), "nothing was created where the store was looked for");
    const writer = await s.open();
    const name = `read-${run}`;
    try {
      await writer.createDataset(spec(name));
    } finally {
      await writer.close();
    }
    const reader = await s.open({ create: false });
    try {
      assert.ok((await reader.listDatasets()).some((d) => d.name === name));
    } finally {
      await reader.close();
    }
  }, { skip: s.skip, timeoutMs: 120_000 });
}

test("sqlite: a reader refuses an SQLite file that is not a cassette store, and leaves it as it was", async () => {
  const path = join(dir, "other-app.sqlite");
  const db = runtime.openSqlite(path);
  db.exec("CREATE TABLE notes (body TEXT)");
  db.close();
  await expectError(openStore(`sqlite:${path}`, { create: false }), "ERR_STORE", /other-app\.sqlite.*without cassette's tables/);
  // Not SQLite at all: SQLite's own reason, not a retry that reads it some other way.
  const junk = join(dir, "notes.txt");
  writeFileSync(junk, "these are not the pages of a database ".repeat(200));
  await expectError(openStore(`sqlite:${junk}`, { create: false }), "ERR_STORE", /notes\.txt.*not a database/);
  const after = runtime.openSqlite(path);
  try {
    assert.equal(after.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all().map((r) => r.name), ["notes"]);
  } finally {
    after.close();
  }
});

// NOTE [ Reading by rowid ] (src/source/sqlite/sqlite.ts): ids read before are read by their rowid,
// which a VACUUM may give to another row, and a deletion to none.
test("sqlite: ids read again go by rowid; rows renumbered by a VACUUM or deleted and added again are read by id, each sample its own bytes", async () => {
  const next = rng(freshSeed());
  const path = join(dir, "rowids.sqlite");
  const name = `rowids-${run}`;
  const writer = await openStore(`sqlite:${path}`);
  const samples = new Map<string, SampleInput>();
  try {
    await writer.createDataset(spec(name));
    for (let i = 0; i < 60; i++) {
      const key = `p${i % 7}/s${i}.jpg`;
      samples.set(sampleId(name, key), { key, label: randomInt(next, 0, 9), data: randomBytes(next, randomInt(next, 1, 3000)), meta: { patient: `P${i % 7}`, slide: i, x: i } });
    }
    await writer.put(name, [...samples.values()]);
  } finally {
    await writer.close();
  }
  const reader = await openStore(`sqlite:${path}`, { create: false }) as Store & { getSomeSync(d: string, ids: string[]): { id: string; label: number; data: Uint8Array }[]; lookups: { byRowid: number; byId: number } };
  const check = (ids: string[], why: string) => {
    const got = reader.getSomeSync(name, ids);
    assert.equal(got.map((s) => s.id).sort(), [...new Set(ids.filter((id) => samples.has(id)))].sort(), `${why}: every stored id found once, none of those deleted`);
    for (const s of got) {
      const want = samples.get(s.id)!;
      assert.ok(want, `${why}: ${s.id} was asked for`);
      assert.is(s.label, want.label, `${why}: label of ${s.id}`);
      assert.ok(s.data.length === want.data.length && s.data.every((b, k) => b === want.data[k]), `${why}: bytes of ${s.id}`);
    }
  };
  try {
    const ids = [...samples.keys()];
    check(ids, "first read");
    assert.equal(reader.lookups, { byRowid: 0, byId: 60 }, "a first read goes by id");
    check(ids.slice().reverse(), "second read");
    assert.equal(reader.lookups, { byRowid: 60, byId: 60 }, "a second read goes by rowid");
    // Another connection deletes every third sample's row and the last one's (the largest
    // rowid), then adds them again: the first gets the last one's old rowid, so the reader's
    // hint for the last names another sample's row. Then every fifth goes, and a VACUUM (which
    // may renumber the rows of a table without an INTEGER PRIMARY KEY).
    const readd = [...ids.filter((_, i) => i % 3 === 0), ids[59]], gone = ids.filter((_, i) => i % 5 === 1);
    const db = runtime.openSqlite(path);
    try {
      const table = tables(name).data;
      const rowid = (id: string) => Number(db.prepare(`SELECT rowid AS r FROM "${table}" WHERE id = ?`).get(id)?.r);
      const lastRowid = rowid(ids[59]);
      for (const id of readd) db.prepare(`DELETE FROM "${table}" WHERE id = ?`).run(id);
      for (const id of readd) {
        const s = samples.get(id)!;
        db.prepare(`INSERT INTO "${table}" (id, label, data) VALUES (?, ?, ?)`).run(id, s.label as number, s.data);
      }
      assert.is(rowid(ids[0]), lastRowid, "the first added again took the last one's rowid");
      for (const id of gone) db.prepare(`DELETE FROM "${table}" WHERE id = ?`).run(id), samples.delete(id);
      db.exec("VACUUM");
    } finally {
      db.close();
    }
    const before = { ...reader.lookups };
    check(ids, "after the rows moved");
    const moved = reader.lookups.byId - before.byId;
    const readAgain = readd.filter((id) => samples.has(id)).length;
    assert.ok(moved >= readAgain, `the ${readAgain} rows added again were read by id: ${moved}`);
    check(ids, "once more");
    assert.is(reader.lookups.byId - before.byId, moved, "then by rowid again");
  } finally {
    await reader.close();
  }
});

/** Mounts a tmpfs at a fresh folder; `seal()` makes it read-only, `unmount()` removes it. Root only. */
function tmpfsMount(): { path: string; seal(): void; unmount(): void } {
  const path = mkdtempSync(join(tmpdir(), "cassette-ro-"));
  const sh = (...args: string[]) => {
    const r = spawnSync(args[0], args.slice(1), { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${args.join(" ")}: ${r.stderr || r.error}`);
  };
  sh("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", path);
  return {
    path,
    seal: () => sh("mount", "-o", "remount,ro", path),
    unmount: () => {
      sh("umount", "--lazy", path); // lazy: a failed assertion may leave a handle open, and must not be hidden
      rmSync(path, { recursive: true, force: true });
    },
  };
}
const NOT_ROOT = (globalThis as { process?: { getuid?: () => number } }).process?.getuid?.() === 0
  ? false
  : "mounting a read-only tmpfs needs root";

test("sqlite: a store on a read-only file system is read whole through the Loader; a writer is refused; a write-ahead log left beside it is named, not skipped", async () => {
  const m = tmpfsMount();
  try {
    const path = join(m.path, "store.sqlite");
    const name = `ro-${run}`;
    const next = rng(freshSeed());
    const samples: SampleInput[] = Array.from({ length: 300 }, (_, i) => ({
      key: `k${i}`, label: i % 7, data: randomBytes(next, randomInt(next, 1, 3000)), meta: { patient: `P${i % 4}` },
    }));
    const writer = await openStore(`sqlite:${path}`);
    await writer.createDataset(spec(name));
    await writer.put(name, samples);
    await writer.close();
    // A second copy whose last commit is still in its write-ahead log: a copy taken while a
    // writer held it open (here, the log copied beside a clean file, without its -shm).
    const held = runtime.openSqlite(path);
    held.exec(`CREATE TABLE later (x INTEGER); INSERT INTO later VALUES (1)`);
    copyFileSync(path, join(m.path, "logged.sqlite"));
    copyFileSync(`${path}-wal`, join(m.path, "logged.sqlite-wal"));
    held.exec(`DROP TABLE later`);
    held.close();
    assert.not.ok(existsSync(`${path}-wal`) && statSync(`${path}-wal`).size > 0, "the writer folded its log in"); // Bun leaves it empty
    m.seal();

    await expectError(openStore(`sqlite:${path}`), "ERR_STORE", /store\.sqlite.*(read-only|readonly|unable to open)/i);
    const { Loader } = await import("../../src/loader.ts");
    const want = new Map(samples.map((x) => [sampleId(name, x.key), x]));
    const loader = new Loader({ store: `sqlite:${path}`, dataset: name, ids: [...want.keys()], batchSize: 32, order: "ready", seed: 1 });
    const seen = new Set<string>();
    for await (const b of loader.epoch(0)) {
      b.ids.forEach((id, i) => {
        assert.not.ok(seen.has(id), `${id} twice`);
        seen.add(id);
        assert.is(b.labels[i], want.get(id)!.label);
        assert.equal(b.items[i].data, want.get(id)!.data, `bytes of ${id}`);
      });
    }
    await loader.close();
    assert.is(seen.size, samples.length);
    await expectError(openStore(`sqlite:${join(m.path, "logged.sqlite")}`, { create: false }), "ERR_STORE", /logged\.sqlite-wal.*write access/);
  } finally {
    m.unmount();
  }
}, { skip: NOT_ROOT, timeoutMs: 60_000 });

test("cassandra: a role granted only SELECT opens the store and reads through the Loader's source; it may not make a keyspace", async () => {
  const address = testCassandra("cassette_conf")!;
  const store = await openStore(address);
  const name = `ro-${run}`;
  const role = `cassette_reader_${runtime.name}`;
  const { keyspace } = parseStoreAddress(address) as { keyspace: string };
  const admin = await openCassandra(address, { withoutKeyspace: true });
  try {
    await store.createDataset(spec(name));
    await store.put(name, [{ key: "a", label: 3, data: new Uint8Array([7, 8, 9]), meta: { patient: "P1" } }]);
    await admin.execute(`CREATE ROLE IF NOT EXISTS ${role} WITH PASSWORD = 'reader-pw' AND LOGIN = true`);
    await admin.execute(`GRANT SELECT ON KEYSPACE ${keyspace} TO ${role}`);
    const asReader = address.replace(/\/\/[^@]*@/, `//${role}:reader-pw@`);
    // Permissions are enforced: making a keyspace where none is needs CREATE.
    await expectError(openStore(asReader.replace(`/${keyspace}`, `/${keyspace}_ro_absent`)), "ERR_STORE", /Cannot prepare keyspace.*(permission|Unauthorized)/i);
    // Opening the existing store needs no schema statement, even with `create` left on.
    const opened = await openStore(asReader);
    try {
      assert.ok((await opened.listDatasets()).some((d) => d.name === name));
    } finally {
      await opened.close();
    }
    const src = await openReadSource(asReader, name);
    try {
      const got = await new Promise<Fetched>((resolve, reject) => src.fetch(sampleId(name, "a"), (e, f) => (e ? reject(e) : resolve(f!))));
      assert.equal([got.label, [...got.data]], [3, [7, 8, 9]]);
    } finally {
      await src.close();
    }
    // A role that may read the registry but not the samples' table: it opens the store, and a
    // read is a named, final error (not "unreachable", not retried).
    await admin.execute(`CREATE ROLE IF NOT EXISTS ${role}_meta WITH PASSWORD = 'meta-pw' AND LOGIN = true`);
    await admin.execute(`GRANT SELECT ON ${keyspace}.cassette_datasets TO ${role}_meta`);
    const asMeta = address.replace(/\/\/[^@]*@/, `//${role}_meta:meta-pw@`);
    const denied = await openReadSource(asMeta, name);
    try {
      const e = await new Promise<Error | null>((resolve) => denied.fetch(sampleId(name, "a"), (err) => resolve(err)));
      assert.instance(e, CassetteError, "a permission refused is a CassetteError");
      assert.is((e as CassetteError).code, "ERR_STORE");
      assert.match(e!.message, /the role may not read it: .*(permission|Unauthorized)/i);
      assert.is((e as { retryable?: boolean }).retryable, false, "not retried: asking again cannot help");
    } finally {
      await denied.close();
    }
  } finally {
    await admin.execute(`DROP ROLE IF EXISTS ${role}_meta`).catch(() => {});
    await admin.execute(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
    await admin.shutdown();
    await store.close();
  }
}, { skip: NO_CASSANDRA || (runtime.env("CASSETTE_TEST_CASSANDRA_AUTH") ? false : "the test node runs without logins and permissions (started outside test/run.ts)"), timeoutMs: 120_000 });

for (const s of stores) {
  test(`${s.name}: the Loader reads a dataset exactly once per epoch in both orders, bytes as stored`, async () => {
    const store = await s.open();
    const { Loader } = await import("../../src/loader.ts");
    try {
      const name = `loader-${run}`;
      await store.createDataset(spec(name));
      const next = rng(freshSeed());
      const samples: SampleInput[] = Array.from({ length: 90 }, (_, i) => ({
        key: `k${i}`, label: i % 3, data: randomBytes(next, randomInt(next, 1, 5000)), meta: { patient: `P${i % 5}` },
      }));
      await store.put(name, samples);
      const want = new Map(samples.map((x) => [sampleId(name, x.key), { label: x.label as number, data: x.data }]));
      for (const order of ["ready", "strict"] as const) {
        const loader = new Loader({ store, dataset: name, ids: [...want.keys()], batchSize: 16, order, seed: 2 });
        for (let e = 0; e < 2; e++) {
          const seen = new Set<string>();
          for await (const b of loader.epoch(e)) {
            for (const id of b.ids) assert.not.ok(seen.has(id), `${id} twice in epoch ${e}`), seen.add(id);
            assertAsStored(b, want);
          }
          assert.is(seen.size, 90, `${order} epoch ${e}`);
        }
        await loader.close();
      }
    } finally {
      await store.close();
    }
  }, { skip: s.skip, timeoutMs: 120_000 });
}
