/** A parent for test/proxy/process.test.ts: starts a proxy process, prints its port, waits to be killed. */
import { startProxyProcess } from "../../tools/proxy/process.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const [target] = runtime.args();
const proxy = await startProxyProcess(target, 0, ["--delay-ms", "1"]);
console.log(JSON.stringify({ port: proxy.port }));
setInterval(() => {}, 1000);
