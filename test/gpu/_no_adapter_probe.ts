// Run by gpu/no_adapter.test.ts in a child process with no Vulkan driver visible: prints the
// error requestDevice gives, as one JSON line.
import { requestDevice } from "../../src/gpu/device.ts";
import { runtime } from "../../runtime-adapters/index.ts";
const backend = runtime.args()[0] as "dawn" | "builtin";
try {
  const d = await requestDevice({ backend });
  console.log(JSON.stringify({ ok: true, adapter: String(d.adapterInfo?.description ?? "") }));
} catch (e) {
  console.log(JSON.stringify({ ok: false, code: (e as { code?: string }).code, message: (e as Error).message }));
}
runtime.exit(0);
