/** An undici Pool through the proxy, against a real HTTP server: as the HTTP source will use it. */
import * as assert from "uvu/assert";
import { createServer } from "node:http";
// Bun answers a bare "undici" with its own stub, whose Pool cannot close
// (oven-sh/bun#12773, #19748): the file path reaches the installed package in every runtime.
import undici from "undici/index.js";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomBytes, rng } from "../_support/random.ts";
import { startProxy, unevenEvery } from "../../tools/proxy/proxy.ts";

const { Pool } = undici;
const seed = freshSeed();
const body = randomBytes(rng(seed), 64 * 1024);
const http = createServer((_req, res) => {
  res.setHeader("content-length", body.length);
  res.end(body);
});
await new Promise<void>((r) => http.listen(0, "127.0.0.1", () => r()));
afterAll(() => new Promise<void>((r) => (http.closeAllConnections(), http.close(() => r()))));

test("an undici Pool of 4 keep-alive connections: the proxy sees 4, and the congested one carries the least", async () => {
  const port = (http.address() as { port: number }).port;
  const proxy = await startProxy({
    target: { host: "127.0.0.1", port },
    profile: unevenEvery(4, { delayMs: 5, bandwidthBytesPerSec: 200_000 }, { delayMs: 5 }),
  });
  const pool = new Pool(`http://${proxy.host}:${proxy.port}`, { connections: 4, pipelining: 1 });
  try {
    const N = 40;
    const bodies = await Promise.all(Array.from({ length: N }, async () => {
      const r = await pool.request({ path: "/x", method: "GET" });
      assert.is(r.statusCode, 200);
      return new Uint8Array(await r.body.arrayBuffer());
    }));
    for (const b of bodies) assert.ok(b.length === body.length && b.every((x, i) => x === body[i]), `body intact (seed ${seed})`);
    const st = proxy.stats();
    assert.is(st.accepted, 4, "one proxied connection per pool connection, kept alive");
    const down = st.connections.map((c) => c.bytesDown);
    assert.ok(down[3] < Math.min(down[0], down[1], down[2]), `the capped connection carried the least: ${down}`);
    assert.ok(st.bytesDown >= N * body.length, "every body went through the proxy");
  } finally {
    await pool.close();
    await proxy.close();
  }
});
