// Worker for worker.test.ts: sums the transferred bytes and transfers the buffer back.
import { runtime } from "../../runtime-adapters/index.ts";
const scope = runtime.workerScope();
scope.onMessage((data) => {
  const { bytes } = data as { bytes: Uint8Array<ArrayBuffer> };
  let sum = 0;
  for (const b of bytes) sum += b;
  scope.postMessage({ sum, runtime: runtime.name, bytes }, [bytes.buffer]);
});
