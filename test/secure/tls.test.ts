/**
 * TLS between cassette and Cassandra, on the node test/run.ts starts for this folder: it
 * accepts only TLS with a client certificate its CA signed (mutual), and only logins. A client
 * with the CA and a certificate reads every sample; an untrusted node, plaintext, and a missing
 * or foreign client certificate are each a named error that says what to give.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_SECURE, testSecure } from "../_support/services.ts";
import { expectError } from "../_support/expect.ts";
import { makeTestCerts, NO_OPENSSL } from "../_support/tls_certs.ts";
import { openStore } from "../../src/source/open.ts";
import { parseStoreAddress } from "../../src/source/kinds.ts";
import type { Store } from "../../src/dataset/store.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { readEachOnce } from "./_read.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const DATASET = "fm-tls";
const dir = mkdtempSync(join(tmpdir(), "cassette-tls-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const skip = NO_SECURE || NO_OPENSSL;

/** Every id of the dataset, written through `store` (40 samples: 20 train, 20 test). */
async function filled(store: Store): Promise<string[]> {
  await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: DATASET, limit: 20 });
  const ids: string[] = [];
  for await (const page of store.scanNat(DATASET)) ids.push(...page.map((r) => r.id));
  return ids;
}

test("the CA and a client certificate in the address: ingest, then a Loader reads every sample once over TLS", async () => {
  const s = testSecure()!;
  const address = s.address("cassette_tls");
  assert.equal((parseStoreAddress(address) as { tls: boolean }).tls, true, "ca= implies tls");
  const store = await openStore(address);
  try {
    const ids = await filled(store);
    assert.is(ids.length, 40);
    await readEachOnce(address, DATASET, ids, 3);
  } finally {
    await store.close();
  }
}, { skip, timeoutMs: 120_000 });

test("the same files as the 'tls' option, with a plain address: reads every sample", async () => {
  const s = testSecure()!;
  const store = await openStore(s.address("cassette_tls", undefined, ""), { cassandra: { tls: { ca: s.ca, cert: s.cert, key: s.key } } });
  try {
    const ids = await filled(store);
    await readEachOnce(store, DATASET, ids, 3);
  } finally {
    await store.close();
  }
}, { skip, timeoutMs: 120_000 });

test("a node whose certificate no given CA signed is refused: ERR_TLS_UNTRUSTED names the CA given", async () => {
  const s = testSecure()!;
  // A CA of our own, made now: it signed nothing the node presents.
  const other = makeTestCerts(mkdtempSync(join(dir, "other-")));
  const e = await expectError(
    openStore(s.address("cassette_tls", undefined, `ca=${other.caFile}&cert=${s.cert}&key=${s.key}`)),
    "ERR_TLS_UNTRUSTED",
    /server's TLS certificate is not trusted/,
  );
  assert.ok(e.message.includes(other.caFile), `names the CA given: ${e.message}`);
  assert.match(e.message, /ca=/);
  assert.not.ok(e.message.includes(`:${s.password}@`), "no password");
}, { skip });

test("tls=1 with no CA: the system's CAs do not know the node's, and the error says to give ca=FILE", async () => {
  const s = testSecure()!;
  await expectError(
    openStore(s.address("cassette_tls", undefined, `tls=1&cert=${s.cert}&key=${s.key}`)),
    "ERR_TLS_UNTRUSTED",
    /server's TLS certificate is not trusted.*give the CA that signed it with ca=FILE/,
  );
}, { skip });

test("plaintext to the TLS-only node: a named error that says tls=1, within a few seconds", async () => {
  const s = testSecure()!;
  const t0 = runtime.now();
  const e = await expectError(openStore(s.address("cassette_tls", undefined, "")), "ERR_STORE_UNREACHABLE", /requires TLS.*tls=1/);
  assert.match(e.message, /ca=FILE/);
  const ms = runtime.now() - t0;
  assert.ok(ms < 5000, `refused in ${ms.toFixed(0)} ms`);
}, { skip });

test("mutual TLS: without a client certificate the node refuses, and the error asks for cert= and key=", async () => {
  const s = testSecure()!;
  await expectError(
    openStore(s.address("cassette_tls", undefined, `ca=${s.ca}`)),
    "ERR_STORE_UNREACHABLE",
    /node requires a client certificate: give cert=FILE and key=FILE/,
  );
}, { skip });

test("mutual TLS: a client certificate that another CA signed is refused, naming the certificate", async () => {
  const s = testSecure()!;
  const other = makeTestCerts(mkdtempSync(join(dir, "foreign-")));
  const certFile = join(dir, "foreign.pem"), keyFile = join(dir, "foreign.key");
  writeFileSync(certFile, other.cert);
  writeFileSync(keyFile, other.key);
  const e = await expectError(
    openStore(s.address("cassette_tls", undefined, `ca=${s.ca}&cert=${certFile}&key=${keyFile}`)),
    "ERR_STORE_UNREACHABLE",
    /client certificate '.*' .*CA it trusts/,
  );
  assert.ok(e.message.includes(`'${certFile}'`), e.message);
}, { skip });

test("TLS files: one that cannot be read, or is not PEM, is named with its parameter; cert needs key", async () => {
  const s = testSecure()!;
  const missing = join(dir, "absent-ca.pem");
  const e = await expectError(openStore(s.address("cassette_tls", undefined, `ca=${missing}&cert=${s.cert}&key=${s.key}`)), "ERR_STORE_ADDRESS", /cannot be read/);
  assert.ok(e.message.includes(`'${missing}' (ca=)`), e.message);
  assert.not.ok(e.message.includes(`:${s.password}@`), "the password is hidden");
  const notPem = join(dir, "not.pem");
  writeFileSync(notPem, "hello");
  await expectError(openStore(s.address("cassette_tls", undefined, `ca=${s.ca}&cert=${notPem}&key=${s.key}`)), "ERR_STORE_ADDRESS", /not\.pem' \(cert=\) is not a PEM certificate/);
  await expectError(openStore(s.address("cassette_tls", undefined, ""), { cassandra: { tls: { ca: missing } } }), "ERR_STORE_ADDRESS", /\(the tls\.ca option\) cannot be read/);
  await expectError(openStore(s.address("cassette_tls", undefined, `cert=${s.cert}`)), "ERR_STORE_ADDRESS", /needs both 'cert' and 'key': only 'cert'/);
  await expectError(openStore(s.address("cassette_tls", undefined, `tls=0&ca=${s.ca}`)), "ERR_STORE_ADDRESS", /'ca' is a TLS setting but 'tls' is 0/);
}, { skip });
