/**
 * The proxy as a command in its own process (tools/proxy/main.ts, driven by
 * tools/proxy/process.ts, as train.ts --latency-ms and the benchmarks use it): it listens on
 * the port it reports, adds its delay, samples byte counts per connection, reports a bad
 * option with the proxy's own message, and is gone after close() or once its parent is killed.
 */
import * as assert from "uvu/assert";
import { spawn } from "node:child_process";
import { afterAll, test } from "../_support/harness.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { startProxyProcess, type ProxyProcess } from "../../tools/proxy/process.ts";
import { dial, echo, eventually, readBytes, roundTrip, startServer, type TestServer } from "./_servers.ts";

const servers: TestServer[] = [];
const proxies: ProxyProcess[] = [];
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all(servers.map((s) => s.close()));
});

test("a proxy process adds its delay, samples each connection's bytes, and is gone after close", async () => {
  const server = await startServer(echo);
  servers.push(server);
  const proxy = await startProxyProcess(`127.0.0.1:${server.port}`, 0, ["--delay-ms", "30", "--no-handshake"], { sampleMs: 20 });
  proxies.push(proxy);
  assert.ok(proxy.port > 0);
  const s = await dial(proxy.port);
  const rtts: number[] = [];
  for (let i = 0; i < 3; i++) rtts.push(await roundTrip(s));
  // 30 ms each way: nothing comes back in less than 60 ms.
  assert.ok(Math.min(...rtts) >= 59, `round trips ${rtts.map((r) => r.toFixed(1))} ms`);
  const payload = new Uint8Array(200_000).map((_, i) => i * 7);
  const back = readBytes(s, payload.length);
  s.write(payload);
  assert.equal((await back).length, payload.length);
  // The samples count what went through: 3 pings of 4 bytes and the payload, each way.
  const total = 3 * 4 + payload.length;
  assert.ok(
    await eventually(() => proxy.snapshots.some((snap) => snap.c.some(([, down, up]) => down === total && up === total))),
    `last sample ${JSON.stringify(proxy.snapshots.at(-1))}, expected ${total} bytes each way`,
  );
  const t = proxy.snapshots.map((snap) => snap.t);
  assert.ok(t.every((x, i) => i === 0 || x >= t[i - 1]), "samples in time order");
  s.destroy();
  await proxy.close();
  // Gone: a new connection to its port is refused.
  const refused = await dial(proxy.port).then((c) => (c.destroy(), false), () => true);
  assert.ok(refused, "the proxy still accepts connections after close()");
});

test("a proxy process that cannot start rejects with the proxy's own message", async () => {
  let err: Error | undefined;
  try {
    proxies.push(await startProxyProcess("127.0.0.1:9", 0, ["--delay-ms", "soon"]));
  } catch (e) {
    err = e as Error;
  }
  assert.ok(err, "started with --delay-ms soon");
  assert.match(err!.message, /exited \(2\) before listening: proxy: Cannot start the proxy as '--delay-ms' must be a number: current value is soon/);
});

test("a proxy process dies with its parent, even a parent killed by SIGKILL (no exit handler runs)", async () => {
  const server = await startServer(echo);
  servers.push(server);
  const [cmd, ...args] = runtime.scriptCommand(new URL("./_proxy_parent.ts", import.meta.url).pathname, [`127.0.0.1:${server.port}`]);
  const parent = spawn(cmd, args, { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    parent.stdout!.setEncoding("utf8");
    parent.stdout!.on("data", (c: string) => {
      out += c;
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    parent.once("exit", (code) => reject(new Error(`the parent exited (${code}) before its proxy listened`)));
  });
  const s = await dial(port);
  assert.ok((await roundTrip(s)) >= 1.9, "the proxy is up and delays");
  s.destroy();
  parent.kill("SIGKILL");
  let gone = false;
  for (let i = 0; i < 50 && !gone; i++) {
    gone = await dial(port).then((c) => (c.destroy(), false), () => true);
    if (!gone) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(gone, `the proxy on port ${port} outlived its killed parent by 5 s`);
});
