/** Real TCP servers on port 0 and client helpers for the proxy tests. */
import { connect, createServer, type Socket } from "node:net";
import { runtime } from "../../runtime-adapters/index.ts";

export interface TestServer {
  port: number;
  /** Sockets the server holds open right now. */
  open(): number;
  close(): Promise<void>;
}

/** A server that runs `onConnection` for each client and counts its open sockets. */
export async function startServer(onConnection: (s: Socket) => void): Promise<TestServer> {
  const sockets = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true }, (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
    onConnection(s);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as { port: number }).port,
    open: () => sockets.size,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Writes back what it reads; ends when the client ends. */
export function echo(s: Socket): void {
  s.on("data", (d) => s.write(d));
  s.on("end", () => s.end());
}

export function dial(port: number, host = "127.0.0.1"): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port, allowHalfOpen: true });
    s.setNoDelay(true);
    s.once("connect", () => {
      s.off("error", reject);
      resolve(s);
    });
    s.once("error", reject);
  });
}

/** Reads from `s` until `n` bytes have come (or the stream ends); resolves with them. */
export function readBytes(s: Socket, n: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const out = new Uint8Array(n);
    let got = 0;
    const onData = (d: Uint8Array) => {
      out.set(d.subarray(0, Math.min(d.length, n - got)), got);
      got += d.length;
      if (got >= n) done();
    };
    const onEnd = () => (got >= n ? done() : (cleanup(), reject(new Error(`stream ended after ${got} of ${n} bytes`))));
    const cleanup = () => {
      s.off("data", onData);
      s.off("end", onEnd);
      s.off("close", onEnd);
    };
    const done = () => (cleanup(), resolve(out));
    s.on("data", onData);
    s.on("end", onEnd);
    s.on("close", onEnd);
  });
}

/** Milliseconds for one echo round trip of a few bytes. */
export async function roundTrip(s: Socket): Promise<number> {
  const t0 = runtime.now();
  const reply = readBytes(s, 4);
  s.write("ping");
  await reply;
  return runtime.now() - t0;
}

export function closed(s: Socket): Promise<void> {
  return s.destroyed && s.closed ? Promise.resolve() : new Promise((r) => s.once("close", () => r()));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[s.length >> 1];
}

/** Polls `cond` every 10 ms until it holds or `ms` pass; returns whether it held. */
export async function eventually(cond: () => boolean, ms = 2000): Promise<boolean> {
  const end = runtime.now() + ms;
  while (!cond()) {
    if (runtime.now() > end) return false;
    await sleep(10);
  }
  return true;
}
