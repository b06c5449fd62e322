/**
 * A stored sample that does not decode (real cjpeg files with corrupt scan data, stored by an
 * ingest without --verify): the read-time error names it by the key it was ingested from and
 * by its id, once each, and carries the decoder's reason and byte offset.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { corruptFolder } from "../dataset/_corrupt_jpeg.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import { createJpegDecoder } from "../../src/decode/jpeg.ts";
import { JpegError } from "../../src/decode/jpeg_error.ts";
import { DecodeSource, SampleDecodeError } from "../../src/read/decode_source.ts";
import { open } from "../../src/read/open.ts";
import type { Sample } from "../../src/read/sample.ts";
import { openStore } from "../../src/source/open.ts";
import type { Source } from "../../src/source/source.ts";
import { Loader } from "../../src/loader.ts";
import type { Store } from "../../src/dataset/store.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-decode-error-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CUT = join("b", "cut.jpg"), MARKER = join("a", "marker.jpg");
const count = (text: string, part: string) => text.split(part).length - 1;

async function corruptStore(name: string): Promise<{ store: Store; ids: string[]; cutAt: number }> {
  const { root, cutAt } = corruptFolder(join(dir, name));
  const store = await openStore(`sqlite:${join(dir, `${name}.sqlite`)}`);
  const s = await ingest(store, root, { dataset: "imgs" }); // no verify: the corrupt files are stored
  assert.is(s.written, 10);
  const ids: string[] = [];
  for await (const page of store.scanNat("imgs")) ids.push(...page.map((r) => r.id));
  return { store, ids, cutAt };
}

function fetchOne(source: Source<Sample>, id: string): Promise<Sample> {
  return new Promise((resolve, reject) => source.fetch(id, (e, s) => (e ? reject(e) : resolve(s!))));
}

test("a sample that does not decode is named by its key and its id, once each, with the decoder's reason and offset", async () => {
  const { store, cutAt } = await corruptStore("source");
  const source = await open(store, { mode: "read", dataset: "imgs", decode: true });
  try {
    const id = sampleId("imgs", CUT);
    const e = await fetchOne(source, id).then(() => null, (e) => e);
    assert.instance(e, SampleDecodeError);
    assert.equal([e.code, e.id, e.key, e.retryable], ["ERR_MALFORMED_INPUT", id, CUT, false]);
    assert.is(e.message, `Cannot decode sample '${CUT}' (id ${id}) from ${source.name}: ` +
      `Cannot decode JPEG as a marker interrupts the entropy-coded data before the scan's last block: at byte ${cutAt}`);
    assert.equal([count(e.message, id), count(e.message, CUT)], [1, 1]);
    assert.instance(e.cause, JpegError);
    assert.equal([e.cause.reason, e.cause.offset], ["short-scan", cutAt]);
    const good = await fetchOne(source, sampleId("imgs", join("a", "g0.jpg")));
    assert.equal([good.image!.width, good.image!.height], [48, 48], "the others decode");
  } finally {
    await source.close();
    await store.close();
  }
});

test("a source that cannot look keys up: the error names the id, once", async () => {
  const { store } = await corruptStore("nokeys");
  const inner = await open(store, { mode: "read", dataset: "imgs" });
  // Only the Source interface: no keyOf, as an export (file:, http://) has no keys.
  const bare: Source = { name: "bare", fetch: (id, done) => inner.fetch(id, done), onDrain: (l) => inner.onDrain(l), inFlight: () => inner.inFlight(), close: () => inner.close() };
  const source = new DecodeSource(bare, await createJpegDecoder());
  try {
    const id = sampleId("imgs", CUT);
    const e = await fetchOne(source, id).then(() => null, (e) => e);
    assert.instance(e, SampleDecodeError);
    assert.is(e.key, undefined);
    assert.match(e.message, new RegExp(`^Cannot decode sample ${id} from bare: Cannot decode JPEG as `));
    assert.is(count(e.message, id), 1);
  } finally {
    await source.close();
    await store.close();
  }
});

test("the Loader by address, here and in a read worker: the epoch's error names the sample's key and id once each", async () => {
  const { store, ids } = await corruptStore("address");
  const address = store.address;
  await store.close();
  for (const workers of [0, 1]) {
    const loader = new Loader({ store: address, dataset: "imgs", ids, batchSize: 4, decode: true, workers });
    const e = await Array.fromAsync(loader.epoch(0)).then(() => null, (e) => e);
    await loader.close();
    assert.ok(e, "the epoch ends with an error");
    const key = [CUT, MARKER].find((k) => e.message.includes(`'${k}'`));
    assert.ok(key, `workers ${workers}: names a bad sample's key: ${e.message}`);
    const id = sampleId("imgs", key!);
    assert.equal([count(e.message, key!), count(e.message, id), count(e.message, address)], [1, 1, 1], e.message);
    assert.match(e.message, /: at byte \d+ \(epoch 0\)$/);
  }
});

test("the Loader: the epoch's error names the key once; with onError 'skip' both bad samples are counted and the rest delivered", async () => {
  const { store, ids } = await corruptStore("loader");
  try {
    const throwing = new Loader({ store, dataset: "imgs", ids, batchSize: 4, decode: true, retries: 2 });
    const e = await Array.fromAsync(throwing.epoch(0)).then(() => null, (e) => e);
    await throwing.close();
    assert.ok(e, "the epoch ends with an error");
    const key = [CUT, MARKER].find((k) => e.message.includes(`'${k}'`));
    assert.ok(key, `names a bad sample's key: ${e.message}`);
    assert.is(count(e.message, key!), 1, e.message);
    assert.is(e.code, "ERR_MALFORMED_INPUT");
    assert.is(throwing.stats().retries, 0, "not retried: the bytes would be the same");

    const skipping = new Loader({ store, dataset: "imgs", ids, batchSize: 4, decode: true, onError: "skip" });
    const got = (await Array.fromAsync(skipping.epoch(0))).flatMap((b) => b.ids);
    assert.is(skipping.skipped(0), 2);
    await skipping.close();
    assert.equal(got.sort(), ids.filter((id) => id !== sampleId("imgs", CUT) && id !== sampleId("imgs", MARKER)).sort());
  } finally {
    await store.close();
  }
});
