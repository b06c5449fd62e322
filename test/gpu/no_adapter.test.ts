import * as assert from "uvu/assert";
import { spawn } from "node:child_process";
import { test } from "../_support/harness.ts";
import { runtime } from "../../runtime-adapters/index.ts";

// A child process of this same runtime with no Vulkan driver visible. Deno's wgpu would fall
// back to OpenGL (Mesa's llvmpipe GL), a working adapter, so the child is told to use Vulkan.
const NO_DRIVER = {
  VK_ICD_FILENAMES: "/nonexistent/icd.json",
  VK_DRIVER_FILES: "/nonexistent/icd.json",
  DENO_WEBGPU_BACKEND: "vulkan",
};

function probe(backend: string): Promise<{ out: string; ms: number }> {
  const [cmd, ...args] = runtime.scriptCommand("test/gpu/_no_adapter_probe.ts", [backend]);
  const t0 = runtime.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...NO_DRIVER }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", () => {});
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the probe hung for 60 s: ${out}`));
    }, 60_000);
    child.on("close", () => {
      clearTimeout(timer);
      resolve({ out, ms: runtime.now() - t0 });
    });
  });
}

for (const backend of runtime.gpuBackends) {
  test(`no WebGPU driver: requestDevice fails with ERR_NO_GPU_ADAPTER, not a hang or a null device (${backend})`, async () => {
    const { out } = await probe(backend);
    const line = out.trim().split("\n").pop()!;
    const result = JSON.parse(line);
    assert.is(result.ok, false, `got a device: ${line}`);
    assert.is(result.code, "ERR_NO_GPU_ADAPTER", line);
    assert.match(result.message, /lavapipe/);
  }, { timeoutMs: 90_000 });
}
