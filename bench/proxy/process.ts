/**
 * The proxy in its own process (bench/proxy/main.ts), so its copies and timers do not share
 * the measured client's event loop. Resolves once the proxy accepts connections.
 */
import { spawn } from "node:child_process";
import { connect, createServer } from "node:net";
import { runtime } from "../../runtime-adapters/index.ts";

export interface ProxyProcess {
  port: number;
  close(): Promise<void>;
}

/** A port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Starts the proxy on `port` (0: a free one, see `ProxyProcess.port`). */
export async function startProxyProcess(target: string, port: number, args: string[] = []): Promise<ProxyProcess> {
  if (port === 0) port = await freePort();
  const [cmd, ...pre] = runtime.scriptCommand(new URL("./main.ts", import.meta.url).pathname, [
    "--target", target, "--listen", `127.0.0.1:${port}`, ...args,
  ]);
  // CASSETTE_PROXY_CPUS=LIST runs the proxy on those CPUs only (taskset): benchmarks put the
  // store's side on cores of its own, as if it were remote, and keep the client on the others.
  const cpus = runtime.env("CASSETTE_PROXY_CPUS");
  const child = cpus ? spawn("taskset", ["-c", cpus, cmd, ...pre], { stdio: "ignore" }) : spawn(cmd, pre, { stdio: "ignore" });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((r) => {
      const s = connect(port, "127.0.0.1", () => (s.destroy(), r(true)));
      s.on("error", () => r(false));
    });
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    close: () => new Promise<void>((r) => (child.once("exit", () => r()), child.kill("SIGTERM"))),
  };
}
