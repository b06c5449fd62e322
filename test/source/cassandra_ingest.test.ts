/**
 * A sample is stored whole or written again: an ingest's re-run skips only the samples whose
 * three rows (data, metadata_by_uuid, metadata_by_nat) are all there (src/source/cassandra/cassandra.ts
 * `existing`). A logged batch cut short by its coordinator's death can leave some of the rows
 * until the batch log replays it; here the rows are deleted by hand, which is what a re-run
 * would find then. test/cluster/cluster.test.ts kills a node mid-ingest for real.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { CassandraStore } from "../../src/source/cassandra/cassandra.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { natBucket, tables } from "../../src/dataset/schema.ts";

const DATASET = "fm-partial";

test("a sample missing one of its three rows counts as not stored: the re-run writes it again, the rest are skipped", async () => {
  const store = await CassandraStore.open(testCassandra("cassette_partial")!);
  try {
    const t = tables(DATASET);
    for (const table of [t.data, t.byUuid, t.byNat]) await store.client.execute(`DROP TABLE IF EXISTS ${store.keyspace}.${table}`);
    await store.client.execute(`DELETE FROM ${store.keyspace}.cassette_datasets WHERE name = ?`, [DATASET]);
    const first = await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: DATASET, limit: 6 });
    assert.is(first.written, 12);
    const rows: { id: string; label: number }[] = [];
    for await (const page of store.scanNat(DATASET)) rows.push(...page.map((r) => ({ id: r.id, label: r.label })));
    assert.is(rows.length, 12);
    // One sample without its data row, one without its uuid row, one without its nat row.
    const [a, b, c] = rows;
    await store.client.execute(`DELETE FROM ${store.keyspace}.${t.data} WHERE id = ?`, [a.id], { prepare: true });
    await store.client.execute(`DELETE FROM ${store.keyspace}.${t.byUuid} WHERE id = ?`, [b.id], { prepare: true });
    await store.client.execute(`DELETE FROM ${store.keyspace}.${t.byNat} WHERE label = ? AND bucket = ? AND id = ?`, [c.label, natBucket(c.id), c.id], { prepare: true });
    assert.equal([...await store.existing(DATASET, rows.map((r) => r.id))].sort(), rows.slice(3).map((r) => r.id).sort(), "only whole samples exist");

    const again = await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: DATASET, limit: 6 });
    assert.equal([again.written, again.existing], [3, 9], "the three partial samples written again, nine skipped");
    assert.is((await store.existing(DATASET, rows.map((r) => r.id))).size, 12, "every sample whole after the re-run");
    const nat: string[] = [];
    for await (const page of store.scanNat(DATASET)) nat.push(...page.map((r) => r.id));
    assert.equal([nat.length, new Set(nat).size], [12, 12], "each sample once in metadata_by_nat");
    assert.is((await store.info(DATASET)).count, 12, "each sample once in metadata_by_uuid");
  } finally {
    await store.close();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 60_000 });
