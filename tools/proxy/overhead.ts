/**
 * What the proxy itself costs, in this runtime: the round trip of a small message and the
 * throughput of one bulk echo stream, direct vs through the proxy at 0 ms and at 10 ms one way.
 * The proxy runs in this process, as tests run it (the CLI, main.ts, runs it in its own).
 *
 *   bun tools/proxy/overhead.ts [--mb 64]
 */
import { connect, createServer, type Socket } from "node:net";
import { runtime } from "../../runtime-adapters/index.ts";
import { startProxy, uniform } from "./proxy.ts";
import { intOption, parseArgs, usageError } from "../../src/cli/args.ts";
import { CassetteError } from "../../src/errors.ts";

const PROGRAM = "tools/proxy/overhead.ts";
const USAGE = `usage: bun tools/proxy/overhead.ts [--mb M]
  --mb M   MiB in the bulk echo stream, a whole number (default 64)`;
const MB = megabytes();

/** --mb, read by the cassette command's parser; a bad option ends the run as it ends a cassette command. */
function megabytes(): number {
  try {
    const { positional, options } = parseArgs(runtime.args(), "", ["mb"], [], PROGRAM);
    if (options.has("help")) {
      console.log(USAGE);
      runtime.exit(0);
    }
    if (positional.length) usageError("", `takes only options: got '${positional[0]}'`, PROGRAM);
    const mb = intOption(options, "", "mb", PROGRAM) ?? 64;
    if (mb < 1) usageError("", `--mb must be at least 1: current value is ${mb}`, PROGRAM);
    return mb;
  } catch (e) {
    if (!(e instanceof CassetteError)) throw e;
    console.error(`${PROGRAM}: ${e.message} [${e.code}]`);
    return runtime.exit(2);
  }
}

const server = createServer({ allowHalfOpen: true }, (s) => {
  s.on("data", (d) => s.write(d));
  s.on("end", () => s.end());
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
const port = (server.address() as { port: number }).port;

function dial(p: number): Promise<Socket> {
  return new Promise((r) => {
    const s = connect({ host: "127.0.0.1", port: p }, () => r(s));
    s.setNoDelay(true);
  });
}
function echoOf(s: Socket, n: number): Promise<void> {
  return new Promise((r) => {
    let got = 0;
    const on = (d: Uint8Array) => {
      got += d.length;
      if (got >= n) s.off("data", on), r();
    };
    s.on("data", on);
  });
}

async function measure(p: number) {
  const s = await dial(p);
  const rts: number[] = [];
  for (let i = -1; i < 50; i++) { // i = -1: the first pays for the handshake, not counted
    const t0 = runtime.now();
    const back = echoOf(s, 8);
    s.write("12345678");
    await back;
    if (i >= 0) rts.push(runtime.now() - t0);
  }
  rts.sort((a, b) => a - b);
  const chunk = new Uint8Array(1 << 20);
  const t0 = runtime.now();
  const back = echoOf(s, MB << 20);
  for (let i = 0; i < MB; i++) s.write(chunk);
  await back;
  const secs = (runtime.now() - t0) / 1000;
  s.destroy();
  return { p50: rts[25], max: rts[49], mbps: (2 * MB) / secs }; // echoed: MB each way
}

console.log(`${runtime.name} ${runtime.version}: small round trips (50) and a ${MB} MB echo on one connection`);
console.log("path                     rt p50 ms  rt max ms   MB/s (both ways)");
const rows: [string, number | undefined][] = [["direct", undefined], ["proxy, 0 ms", 0], ["proxy, 10 ms one way", 10]];
for (const [name, delay] of rows) {
  const proxy = delay === undefined ? undefined : await startProxy({ target: { host: "127.0.0.1", port }, profile: uniform(delay) });
  const r = await measure(proxy?.port ?? port);
  console.log(`${name.padEnd(24)} ${r.p50.toFixed(2).padStart(9)} ${r.max.toFixed(2).padStart(10)} ${r.mbps.toFixed(0).padStart(18)}`);
  await proxy?.close();
}
server.close();
runtime.exit(0);
