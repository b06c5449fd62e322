import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { freshSeed, randomBytes, rng } from "../_support/random.ts";
import { runtime } from "../../runtime-adapters/index.ts";

test("module worker: bytes are transferred (not copied) both ways and the reply is right", async () => {
  const seed = freshSeed();
  const bytes = randomBytes(rng(seed), 100_000);
  const want = bytes.reduce((a, b) => a + b, 0);
  const worker = runtime.spawnWorker(new URL("./_echo_worker.ts", import.meta.url));
  try {
    const reply = await new Promise<{ sum: number; runtime: string; bytes: Uint8Array }>((resolve, reject) => {
      worker.onmessage = (ev) => resolve(ev.data as never);
      worker.onerror = reject;
      worker.postMessage({ bytes }, [bytes.buffer]);
    });
    assert.is(bytes.byteLength, 0, "the sender's buffer is detached: it was transferred");
    assert.is(reply.sum, want, `seed ${seed}`);
    assert.is(reply.runtime, runtime.name);
    assert.is(reply.bytes.length, 100_000);
  } finally {
    worker.terminate();
  }
});

test("file IO round trip and a monotonic clock", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-rt-"));
  try {
    const data = randomBytes(rng(freshSeed()), 4097);
    const path = join(dir, "f.bin");
    await runtime.writeFile(path, data);
    assert.equal(Array.from(await runtime.readFile(path)), Array.from(data));
    assert.equal(Array.from(await runtime.readFile(new URL(`file://${path}`))), Array.from(data));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const a = runtime.now();
  await new Promise((r) => setTimeout(r, 20));
  assert.ok(runtime.now() - a >= 15, "now() advances in milliseconds");
});

test("the runtime is detected and says which GPU backends it offers", () => {
  assert.ok(["deno", "bun", "node"].includes(runtime.name));
  assert.ok(runtime.gpuBackends.includes("dawn"), "every runtime offers Dawn");
  assert.ok(/^\d+\.\d+/.test(runtime.version));
});
