/**
 * Logins and permissions, on every run: the node test/run.ts starts for this folder has
 * PasswordAuthenticator and CassandraAuthorizer (and mutual TLS), whatever node the other tests
 * use. A wrong password, a role with no SELECT on the samples' table, and a role that may only
 * read: each a named error or a whole epoch. Roles and keyspaces are per runtime, as the
 * runtimes' runs may overlap on one node.
 */
import * as assert from "uvu/assert";
import { afterAll, test } from "../_support/harness.ts";
import { NO_SECURE, testSecure } from "../_support/services.ts";
import { expectError } from "../_support/expect.ts";
import { openStore } from "../../src/source/open.ts";
import { openCassandra } from "../../src/source/cassandra/cassandra_client.ts";
import { parseStoreAddress } from "../../src/source/kinds.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { open } from "../../src/read/open.ts";
import type { Fetched } from "../../src/source/source.ts";
import { Loader } from "../../src/loader.ts";
import { CassetteError } from "../../src/errors.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { readEachOnce } from "./_read.ts";

const DATASET = "fm-roles";
const KEYSPACE = "cassette_roles";
const role = (what: string) => ({ user: `cassette_${what}_${runtime.name}`, password: `${what}-pw-${runtime.name}` });
const LOADER = role("loader"), META = role("meta"), NOBODY = role("nobody");

let prepared: Promise<string[]> | undefined;
/**
 * As the superuser: the dataset ingested (40 samples), and the three roles made afresh: a
 * loader with SELECT on the keyspace, one with SELECT on the registry table only, one with no
 * permission at all. Resolves to the samples' ids.
 */
function setUp(): Promise<string[]> {
  return prepared ??= (async () => {
    const s = testSecure()!;
    const address = s.address(KEYSPACE);
    const store = await openStore(address);
    const ids: string[] = [];
    try {
      await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: DATASET, limit: 20 });
      for await (const page of store.scanNat(DATASET)) ids.push(...page.map((r) => r.id));
    } finally {
      await store.close();
    }
    const { keyspace } = parseStoreAddress(address) as { keyspace: string };
    const admin = await openCassandra(address, { withoutKeyspace: true });
    try {
      for (const r of [LOADER, META, NOBODY]) {
        await admin.execute(`DROP ROLE IF EXISTS ${r.user}`);
        await admin.execute(`CREATE ROLE ${r.user} WITH PASSWORD = '${r.password}' AND LOGIN = true`);
      }
      await admin.execute(`GRANT SELECT ON KEYSPACE ${keyspace} TO ${LOADER.user}`);
      await admin.execute(`GRANT SELECT ON ${keyspace}.cassette_datasets TO ${META.user}`);
    } finally {
      await admin.shutdown();
    }
    return ids;
  })();
}

afterAll(async () => {
  const s = testSecure();
  if (!s || !prepared) return;
  const admin = await openCassandra(s.address(KEYSPACE), { withoutKeyspace: true });
  try {
    for (const r of [LOADER, META, NOBODY]) await admin.execute(`DROP ROLE IF EXISTS ${r.user}`).catch(() => {});
  } finally {
    await admin.shutdown();
  }
});

test("a wrong password is ERR_STORE that names the user, not the password", async () => {
  const s = testSecure()!;
  const wrong = { user: s.user, password: `not-${s.password}-${runtime.name}` };
  const e = await expectError(openStore(s.address(KEYSPACE, wrong), { create: false }), "ERR_STORE", /Cannot log in to Cassandra at 127\.0\.0\.1:\d+ as user 'cassandra'/);
  assert.not.ok(e.message.includes(wrong.password), `the password is not shown: ${e.message}`);
  // The same through the Loader's way in.
  await expectError(open(s.address(KEYSPACE, wrong), { mode: "read", dataset: DATASET }), "ERR_STORE", /Cannot log in/);
}, { skip: NO_SECURE, timeoutMs: 60_000 });

test("a role with no permission: the store opens (no schema statement), and reading the registry is refused, naming the table", async () => {
  await setUp();
  const s = testSecure()!;
  const table = new RegExp(`no SELECT permission on <table ${KEYSPACE}_${runtime.name}\\.cassette_datasets>`);
  const refused = async (p: Promise<unknown>) => {
    const e = await p.then(() => undefined, (e: unknown) => e as Error);
    assert.ok(e instanceof Error, "refused");
    assert.match(e.message, table);
    // The driver's Unauthorized (0x2100) as a final ERR_STORE (src/source/cassandra/cassandra.ts #execute).
    assert.instance(e, CassetteError, `a refused permission is a CassetteError: ${e}`);
    assert.is((e as CassetteError).code, "ERR_STORE", e.message);
    assert.match(e.message, /cassette_datasets .* as the role may not/);
  };
  const store = await openStore(s.address(KEYSPACE, NOBODY), { create: false });
  try {
    await refused(store.listDatasets());
  } finally {
    await store.close();
  }
  await refused(open(s.address(KEYSPACE, NOBODY), { mode: "read", dataset: DATASET }));
}, { skip: NO_SECURE, timeoutMs: 120_000 });

test("a role with SELECT on the registry only: it opens the dataset, and a read is a final ERR_STORE naming the table", async () => {
  const ids = await setUp();
  const s = testSecure()!;
  const src = await open(s.address(KEYSPACE, META), { mode: "read", dataset: DATASET });
  try {
    const t0 = runtime.now();
    const e = await new Promise<Error | null>((resolve) => src.fetch(ids[0], (err) => resolve(err)));
    assert.instance(e, CassetteError, "a refused permission is a CassetteError");
    assert.is((e as CassetteError).code, "ERR_STORE", e!.message);
    assert.match(e!.message, /the role may not read it: .*no SELECT permission on <table [a-z_]+\.[a-z_0-9]+>/);
    assert.is((e as { retryable?: boolean }).retryable, false, "not retried: asking again cannot help");
    assert.ok(runtime.now() - t0 < 5000, "at once, not after retries");
  } finally {
    await src.close();
  }
  // Through a Loader the epoch ends with that error, naming the sample.
  const loader = new Loader({ store: s.address(KEYSPACE, META), dataset: DATASET, ids, batchSize: 8, seed: 1 });
  try {
    let err: unknown;
    try {
      for await (const _ of loader.epoch(0)) { /* the first read fails */ }
    } catch (e) {
      err = e;
    }
    assert.instance(err, CassetteError, `the epoch fails: ${err}`);
    assert.match((err as Error).message, /no SELECT permission/);
  } finally {
    await loader.close();
  }
}, { skip: NO_SECURE, timeoutMs: 120_000 });

test("a loader role with SELECT only: a Loader reads every sample once; writing is refused", async () => {
  const ids = await setUp();
  const s = testSecure()!;
  await readEachOnce(s.address(KEYSPACE, LOADER), DATASET, ids, 2);
  // SELECT is all it may do: a write is refused by the node, named.
  const store = await openStore(s.address(KEYSPACE, LOADER), { create: false });
  try {
    const e = await store.put(DATASET, [{ key: "x", label: 1, data: new Uint8Array([1]) }]).then(() => undefined, (e: unknown) => e);
    assert.ok(e instanceof Error, "the write fails");
    assert.match((e as Error).message, /MODIFY permission|Unauthorized|permission/i);
  } finally {
    await store.close();
  }
}, { skip: NO_SECURE, timeoutMs: 120_000 });
