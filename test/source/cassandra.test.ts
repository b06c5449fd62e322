import * as assert from "uvu/assert";
import { connect, createServer, type Socket } from "node:net";
import { test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { cassandraTypes, openCassandra } from "../../src/source/cassandra/cassandra_client.ts";
import { parseStoreAddress } from "../../src/source/kinds.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import { CassetteError } from "../../src/errors.ts";
import { CassandraStore } from "../../src/source/cassandra/cassandra.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { tables } from "../../src/dataset/schema.ts";
import { pagesInOrder, type TokenRange, tokenWhere } from "../../src/source/cassandra/cassandra_scan.ts";

test("cassandra-driver: create keyspace and tables, write and read random blobs, 200 requests in flight", async () => {
  const address = testCassandra("cassette_rt")!;
  const { keyspace } = parseStoreAddress(address) as { keyspace: string };
  const admin = await openCassandra(address, { withoutKeyspace: true });
  try {
    await admin.execute(`CREATE KEYSPACE IF NOT EXISTS ${keyspace} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`);
    await admin.execute(`CREATE TABLE IF NOT EXISTS ${keyspace}.data_by_uuid (id uuid PRIMARY KEY, label int, data blob)`);
  } finally {
    await admin.shutdown();
  }
  const client = await openCassandra(address);
  try {
    await client.execute("TRUNCATE data_by_uuid");
    const seed = freshSeed();
    const next = rng(seed);
    const samples = Array.from({ length: 200 }, (_, i) => ({
      id: sampleId("rt", `${runtime.name}/${i}`),
      label: randomInt(next, 0, 999),
      data: randomBytes(next, randomInt(next, 0, 64 * 1024)),
    }));
    await Promise.all(samples.map((s) =>
      client.execute("INSERT INTO data_by_uuid (id, label, data) VALUES (?, ?, ?)", [s.id, s.label, Buffer.from(s.data)], { prepare: true })
    ));
    // Read back concurrently, one query per id (labels travel with the bytes).
    const rows = await Promise.all(samples.map((s) =>
      client.execute("SELECT id, label, data FROM data_by_uuid WHERE id = ?", [s.id], { prepare: true })
    ));
    rows.forEach((r, i) => {
      const row = r.first();
      assert.ok(row, `row ${samples[i].id} (seed ${seed})`);
      assert.is(row.id.toString(), samples[i].id);
      assert.is(row.label, samples[i].label);
      assert.ok(Buffer.compare(row.data, Buffer.from(samples[i].data)) === 0, `bytes of sample ${i} (seed ${seed})`);
    });
    // And all at once with IN, as a batch fetch would.
    const ids = samples.slice(0, 50).map((s) => cassandraTypes.Uuid.fromString(s.id));
    const many = await client.execute("SELECT id, label FROM data_by_uuid WHERE id IN ?", [ids], { prepare: true });
    assert.is(many.rowLength, 50);
  } finally {
    await client.shutdown();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 180_000 });

test("Cassandra down (closed port): a clear ERR_STORE_UNREACHABLE, not a hang", async () => {
  const t0 = runtime.now();
  try {
    await openCassandra("cassandra://127.0.0.1:1/none", { connectTimeoutMs: 3000 });
    assert.unreachable("should not connect");
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.is((e as CassetteError).code, "ERR_STORE_UNREACHABLE");
    assert.match((e as Error).message, /127\.0\.0\.1:1/);
  }
  assert.ok(runtime.now() - t0 < 10_000, "fails within the deadline");
});

test("a host that accepts TCP but never speaks CQL: a clear error within the deadline", async () => {
  const sockets: { destroy(): void }[] = [];
  const server = createServer((s) => void sockets.push(s)); // accepts, says nothing
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as { port: number }).port;
  const t0 = runtime.now();
  try {
    await openCassandra(`cassandra://127.0.0.1:${port}/none`, { connectTimeoutMs: 2000 });
    assert.unreachable("should not connect");
  } catch (e) {
    assert.is((e as CassetteError).code, "ERR_STORE_UNREACHABLE");
    assert.match((e as Error).message, new RegExp(`127\\.0\\.0\\.1:${port}`));
  } finally {
    for (const s of sockets) s.destroy();
    server.close();
  }
  assert.ok(runtime.now() - t0 < 10_000, `gave up in ${(runtime.now() - t0).toFixed(0)} ms`);
});

test("store addresses: every form parses, and bad ones say what is wrong", () => {
  assert.equal(parseStoreAddress("cassandra://u:p%40ss@10.0.0.1,10.0.0.2:9043/images?dc=dc2&tls=1"), {
    kind: "cassandra", hosts: ["10.0.0.1", "10.0.0.2"], port: 9043, keyspace: "images",
    username: "u", password: "p@ss", dc: "dc2", tls: true, consistency: "local_one",
  });
  assert.equal(parseStoreAddress("sqlite:data/x.sqlite"), { kind: "sqlite", path: "data/x.sqlite" });
  assert.equal(parseStoreAddress("file:/srv/img"), { kind: "file", dir: "/srv/img" });
  assert.equal(parseStoreAddress("https://cdn.example/set/"), { kind: "http", url: "https://cdn.example/set" });
  assert.throws(() => parseStoreAddress("cassandra://h/1bad"), /keyspace '1bad'/);
  assert.throws(() => parseStoreAddress("cassandra://u:secret@h"), (e: Error) => /no keyspace/.test(e.message) && !/secret/.test(e.message));
  assert.throws(() => parseStoreAddress("cassandra://h:99999/k"), /port 99999/);
  assert.throws(() => parseStoreAddress("cassandra://h/k?consistency=strong"), /'consistency' must be one of any, one.*current value is strong/);
  assert.throws(() => parseStoreAddress("cassandra://h/k?replicas=3"), /'replicas' is not an option/);
  assert.equal(parseStoreAddress("cassandra://h/k?connections=4&requests=2048&consistency=LOCAL_QUORUM"), {
    kind: "cassandra", hosts: ["h"], port: 9042, keyspace: "k", username: undefined, password: undefined, dc: "datacenter1", tls: false,
    connections: 4, requests: 2048, consistency: "local_quorum",
  });
  assert.throws(() => parseStoreAddress("cassandra://h/k?connections=0"), /'connections' must be a positive integer/);
  assert.throws(() => parseStoreAddress("mysql://h/db"), /scheme/);
});

test("wrong credentials: a clear error that names the user, not a hang", async () => {
  const good = testCassandra("cassette_auth")!;
  const bad = good.replace(/\/\/[^@]*@/, "//cassandra:wrong-password@");
  try {
    await openCassandra(bad, { connectTimeoutMs: 10_000 });
    assert.unreachable("should be refused");
  } catch (e) {
    assert.is((e as CassetteError).code, "ERR_STORE", (e as Error).message);
    assert.match((e as Error).message, /user 'cassandra'/);
    assert.not.match((e as Error).message, /wrong-password/, "the password is not echoed");
  }
}, { skip: NO_CASSANDRA || (runtime.env("CASSETTE_TEST_CASSANDRA_AUTH") ? false : "the test node runs without authentication (started outside test/run.ts)") });

test("the address's consistency reaches the driver: 'two' on one node is refused as unavailable, the default reads", async () => {
  const address = testCassandra("cassette_cl")!;
  const store = await CassandraStore.open(address);
  const dataset = `cl-${runtime.name}`;
  await store.createDataset({ version: 1, name: dataset, columns: [], groupBy: [], label: { kind: "int" } });
  await store.put(dataset, [{ key: "a", label: 1, data: new Uint8Array([1, 2, 3]) }]);
  await store.close();
  const id = sampleId(dataset, "a");
  const read = async (query: string) => {
    const s = await CassandraStore.open(`${address}${address.includes("?") ? "&" : "?"}${query}`);
    try {
      return await s.get(dataset, [id]).then((r) => r.length, (e: Error) => e);
    } finally {
      await s.close();
    }
  };
  assert.is(await read("consistency=local_one"), 1);
  const e = await read("consistency=two");
  assert.instance(e, Error, "two replicas asked of a one-node cluster");
  assert.match((e as Error).message, /[Nn]ot enough replicas|[Uu]navailable|Cannot achieve consistency level TWO/);
}, { skip: NO_CASSANDRA, timeoutMs: 120_000 });

test("two ingests racing to create one dataset: exactly one schema wins, the other is told whose it is; the same schema twice is no race", async () => {
  const address = testCassandra("cassette_race")!;
  const a = await CassandraStore.open(address), b = await CassandraStore.open(address);
  try {
    const name = `race-${runtime.name}-${Date.now() % 1e6}`;
    const spec = (col: string) => ({ version: 1 as const, name, columns: [{ name: col, type: "text" as const }], groupBy: [], label: { kind: "int" as const } });
    const [ra, rb] = await Promise.allSettled([a.createDataset(spec("site")), b.createDataset(spec("scanner"))]);
    const won = [ra, rb].filter((r) => r.status === "fulfilled");
    const lost = [ra, rb].filter((r) => r.status === "rejected") as PromiseRejectedResult[];
    assert.is(won.length, 1, `one winner: ${[ra, rb].map((r) => r.status)}`);
    assert.instance(lost[0].reason, CassetteError);
    assert.match(lost[0].reason.message, new RegExp(`Cannot create dataset '${name}' .* as it exists with another schema`));
    const winner = (won[0] as PromiseFulfilledResult<{ columns: { name: string }[] }>).value.columns[0].name;
    const fresh = await CassandraStore.open(address);
    try {
      assert.is((await fresh.getDataset(name)).columns[0].name, winner, "the registry holds the winner's schema");
    } finally {
      await fresh.close();
    }
    const same = `${name}-same`;
    const both = await Promise.all([a.createDataset({ ...spec("site"), name: same }), b.createDataset({ ...spec("site"), name: same })]);
    assert.equal(both[0], both[1], "the same schema from both: both go on");
  } finally {
    await a.close();
    await b.close();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 120_000 });

test("a Cassandra source prepares its read statement as it is made, before any read asks for it", async () => {
  const address = testCassandra("cassette_prepare_ahead")!;
  const { CassandraSource } = await import("../../src/source/cassandra/cassandra_source.ts");
  const { ingest } = await import("../../src/dataset/ingest.ts");
  const { tables } = await import("../../src/dataset/schema.ts");
  let store = await CassandraStore.open(address);
  await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "ahead", limit: 2 });
  await store.close();
  store = await CassandraStore.open(address); // a new client: nothing prepared yet
  try {
    const cql = `SELECT label, data FROM ${store.keyspace}.${tables("ahead").data} WHERE id = ?`;
    const metadata = store.client.metadata as unknown as { getPreparedInfo(k: string | undefined, q: string): { queryId?: unknown } };
    const keyspace = (store.client as unknown as { keyspace?: string }).keyspace;
    const source = new CassandraSource(store, "ahead");
    await source.prepared;
    assert.ok(metadata.getPreparedInfo(keyspace, cql).queryId, "the statement is prepared with no read sent");
    const ids = (await Array.fromAsync(store.scanNat("ahead"))).flat().map((r) => r.id);
    const got = await new Promise<{ label: number }>((resolve, reject) => source.fetch(ids[0], (e, s) => (e ? reject(e) : resolve(s!))));
    assert.ok(got.label >= 0 && got.label <= 9, "and a read uses it");
  } finally {
    await store.close();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 60_000 });

test("scanNat's ranged scan yields exactly what the sequential full scan yields, in its order: group columns, labels, several pages a range", async () => {
  const address = testCassandra("cassette_scan")!;
  const dataset = `scan-${runtime.name}`;
  const seed = freshSeed();
  const next = rng(seed);
  const setup = await CassandraStore.open(address);
  try {
    await setup.createDataset({
      version: 1, name: dataset, label: { kind: "int" }, groupBy: ["patient", "slide"],
      columns: [{ name: "patient", type: "text" }, { name: "slide", type: "int" }, { name: "x", type: "float" }],
    });
    // A fresh table each run: the rows of an earlier run's seed would be other ids.
    for (const t of Object.values(tables(dataset))) await setup.client.execute(`TRUNCATE ${setup.keyspace}.${t}`);
    await setup.put(dataset, Array.from({ length: 500 }, (_, i) => ({
      key: `${seed}/${i}`, label: randomInt(next, 0, 3), data: Uint8Array.of(i & 255),
      meta: { patient: `p${randomInt(next, 0, 6)}`, slide: randomInt(next, 0, 2), x: i / 7 },
    })));
    // The sequential full scan, as scanNat did it before it went by token ranges.
    const table = `${setup.keyspace}.${tables(dataset).byNat}`;
    const sequential: string[] = [];
    let pageState: string | undefined;
    do {
      const r = await setup.client.execute(`SELECT * FROM ${table}`, [], { fetchSize: 37, pageState });
      for (const row of r.rows) sequential.push(JSON.stringify([row.id.toString(), row.label, row.patient, Number(row.slide), row.x]));
      pageState = r.pageState ?? undefined;
    } while (pageState);
    assert.ok(new Set(sequential.map((r) => JSON.parse(r).slice(1, 4).join())).size > 20, "many partitions (patient, slide, label, bucket)");
    // Pages of 13 rows: most ranges take several; 1 range is the plain full scan.
    for (const scanConcurrency of [1, 2, 5, 16, 40]) {
      const store = await CassandraStore.open(address, { scanConcurrency, scanPage: 13 });
      try {
        const got: string[] = [];
        for await (const page of store.scanNat(dataset)) {
          assert.ok(page.length > 0 && page.length <= 13, `a page of 1..13 rows, not ${page.length}`);
          for (const r of page) got.push(JSON.stringify([r.id, r.label, r.meta.patient, r.meta.slide, r.meta.x]));
        }
        assert.is(got.length, 500, `every row once (scanConcurrency ${scanConcurrency}, seed ${seed})`);
        assert.ok(got.join("\n") === sequential.join("\n"), `the sequential scan's order (scanConcurrency ${scanConcurrency}, seed ${seed})`);
        const info = await store.info(dataset);
        assert.is(info.count, 500);
      } finally {
        await store.close();
      }
    }
  } finally {
    await setup.close();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 180_000 });

test("token ranges that end at rows' own tokens keep each row once, in the full scan's order: (a, b] and the open ends", async () => {
  const address = testCassandra("cassette_scan")!;
  const store = await CassandraStore.open(address);
  try {
    const t = `${store.keyspace}.edges_${runtime.name}`;
    await store.client.execute(`CREATE TABLE IF NOT EXISTS ${t} (k int, c int, PRIMARY KEY (k, c))`);
    await Promise.all(Array.from({ length: 60 }, (_, i) => store.client.execute(`INSERT INTO ${t} (k, c) VALUES (?, ?)`, [i % 20, i], { prepare: true })));
    const full = (await store.client.execute(`SELECT k, c, token(k) AS t FROM ${t}`)).rows;
    const tokens = [...new Set(full.map((r) => BigInt(r.t.toString())))];
    // Bounds on the first, a middle and the last partition's own token: each is the end of one range (included) and the start of the next (excluded).
    const cuts = [tokens[0], tokens[9], tokens[tokens.length - 1]];
    const ranges: TokenRange[] = [{ upTo: cuts[0] }, { after: cuts[0], upTo: cuts[1] }, { after: cuts[1], upTo: cuts[2] }, { after: cuts[2] }];
    const pages = pagesInOrder(ranges.length, ranges.length, 1, async (i, pageState) => {
      const r = await store.client.execute(`SELECT k, c FROM ${t}${tokenWhere(["k"], ranges[i])}`, [], { fetchSize: 4, pageState });
      return { rows: r.rows.map((row) => `${row.k}/${row.c}`), pageState: r.pageState ?? undefined };
    });
    const got = (await Array.fromAsync(pages)).flat();
    assert.equal(got, full.map((r) => `${r.k}/${r.c}`));
  } finally {
    await store.close();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 120_000 });

/**
 * A TCP proxy in front of `host:port` that records the CQL requests clients send through it and
 * each answer's opcode (protocol v4 frames: version, flags, stream, opcode, length).
 */
async function cqlRecorder(host: string, port: number) {
  const OPS: Record<number, string> = { 0: "ERROR", 1: "STARTUP", 2: "READY", 3: "AUTHENTICATE", 5: "OPTIONS", 6: "SUPPORTED", 7: "QUERY", 8: "RESULT", 9: "PREPARE", 10: "EXECUTE", 11: "REGISTER", 13: "BATCH", 15: "AUTH_RESPONSE", 16: "AUTH_SUCCESS" };
  const frames: { conn: number; to: "node" | "client"; op: string; stream: number; text: string }[] = [];
  const sockets: Socket[] = [];
  const reader = (conn: number, to: "node" | "client") => {
    let buf = new Uint8Array(0);
    return (chunk: Uint8Array) => {
      const joined = new Uint8Array(buf.length + chunk.length);
      joined.set(buf);
      joined.set(chunk, buf.length);
      buf = joined;
      const view = () => new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
      while (buf.length >= 9 && buf.length >= 9 + view().getUint32(5)) {
        const len = view().getUint32(5), op = buf[4];
        // QUERY and PREPARE start with their statement as a [long string].
        const text = (op === 7 || op === 9) ? new TextDecoder().decode(buf.subarray(13, 13 + view().getUint32(9))) : "";
        frames.push({ conn, to, op: OPS[op] ?? String(op), stream: view().getInt16(2), text });
        buf = buf.subarray(9 + len);
      }
    };
  };
  let conns = 0;
  const server = createServer((client) => {
    const conn = ++conns;
    const node = connect(port, host);
    sockets.push(client, node);
    const up = reader(conn, "node"), down = reader(conn, "client");
    client.on("data", (d: Uint8Array) => (up(d), node.write(d)));
    node.on("data", (d: Uint8Array) => (down(d), client.write(d)));
    client.on("close", () => node.destroy());
    node.on("close", () => client.destroy());
    client.on("error", () => {});
    node.on("error", () => {});
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as { port: number }).port,
    frames,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

test("opening a store and reading a dataset's spec: no refused protocol offer, no schema beyond the store's keyspace and registry, no request for the spec", async () => {
  const address = testCassandra("cassette_open")!;
  const setup = await CassandraStore.open(address);
  const dataset = `open-${runtime.name}`;
  await setup.createDataset({ version: 1, name: dataset, columns: [], groupBy: [], label: { kind: "int" } });
  await setup.close();
  const a = parseStoreAddress(address) as { hosts: string[]; port: number };
  const recorder = await cqlRecorder(a.hosts[0], a.port);
  try {
    const store = await CassandraStore.open(address.replace(`@${a.hosts[0]}:${a.port}/`, `@127.0.0.1:${recorder.port}/`).replace(`//${a.hosts[0]}:${a.port}/`, `//127.0.0.1:${recorder.port}/`), {}, false);
    const opened = recorder.frames.length;
    try {
      assert.ok(recorder.frames.some((f) => f.to === "node"), "the store was opened through the recorder");
      assert.is((await store.getDataset(dataset)).name, dataset);
      const shown = recorder.frames.filter((f) => f.to === "node").map((f) => `c${f.conn} ${f.op} ${f.text.slice(0, 90)}`).join("\n  ");
      // A refused STARTUP means the protocol was negotiated down: a connection and a round trip lost.
      const startups = recorder.frames.filter((f) => f.op === "STARTUP");
      for (const s of startups) {
        const answer = recorder.frames.find((f) => f.conn === s.conn && f.to === "client" && f.stream === s.stream);
        assert.ok(answer && answer.op !== "ERROR", `a STARTUP was refused (${answer?.op}):\n  ${shown}`);
      }
      const queries = recorder.frames.filter((f) => f.op === "QUERY" || f.op === "PREPARE").map((f) => f.text);
      assert.not.ok(queries.some((q) => /FROM system_schema\.keyspaces\s*$/i.test(q)), `every keyspace's schema was read:\n  ${shown}`);
      assert.not.ok(queries.some((q) => /system_schema\.(columns|indexes)/i.test(q)), `a table's whole schema was read:\n  ${shown}`);
      assert.is(recorder.frames.length, opened, `getDataset asked the node again:\n  ${shown}`);
      // STARTUP, OPTIONS, system.local, system.peers, REGISTER on the first connection, then the
      // keyspace, the registry table and the registry at once, and a second connection's STARTUP.
      const requests = recorder.frames.filter((f) => f.to === "node" && f.op !== "AUTH_RESPONSE");
      assert.ok(requests.length <= 10, `${requests.length} requests to open:\n  ${shown}`);
    } finally {
      await store.close();
    }
  } finally {
    recorder.close();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 120_000 });
