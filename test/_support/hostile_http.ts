/**
 * A hostile HTTP/1.1 server for tests: raw TCP (node:net), so an answer can break HTTP's own
 * framing (a Content-Length that lies, bytes past the body, a close mid-body), which a real
 * server library would not let a test do. Each path gets a scripted answer; every request
 * received is recorded (path and headers), so a test can count how often a path was asked.
 *
 * Requests on one connection are answered in order (pipelining), one at a time.
 *
 *   const srv = await startHostileServer({ "/data/labels.json": ok(labelsText), "/data/x": liar(5, "helloEXTRA") });
 *   afterAll(() => srv.close());
 *   srv.count("/data/x")   // requests received for it
 */
import { createServer, type Socket } from "node:net";

export interface Received {
  path: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
}

/** Writes one answer on `socket` (raw bytes); resolves when the next request may be answered. */
export type Answer = (socket: Socket, req: Received) => void | Promise<void>;

export interface HostileServer {
  /** `http://127.0.0.1:PORT`. */
  readonly origin: string;
  readonly port: number;
  /** Every request received, in order of arrival. */
  readonly received: Received[];
  /** Requests received for `path`. */
  count(path: string): number;
  /** Sets (or replaces) the answer for `path`. */
  route(path: string, answer: Answer): void;
  close(): Promise<void>;
}

/** Starts a server on a free 127.0.0.1 port; unknown paths answer 404. */
export async function startHostileServer(routes: Record<string, Answer> = {}): Promise<HostileServer> {
  const table = new Map(Object.entries(routes));
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {}); // the client hanging up on a hostile answer is the point
    let buf = "";
    let chain: Promise<void> = Promise.resolve();
    socket.on("data", (d: Uint8Array) => {
      buf += Buffer.from(d).toString("latin1");
      for (let end = buf.indexOf("\r\n\r\n"); end >= 0; end = buf.indexOf("\r\n\r\n")) {
        const [line, ...fields] = buf.slice(0, end).split("\r\n");
        buf = buf.slice(end + 4); // GETs only: no request body
        const headers: Record<string, string> = {};
        for (const f of fields) {
          const i = f.indexOf(":");
          headers[f.slice(0, i).trim().toLowerCase()] = f.slice(i + 1).trim();
        }
        const req = { path: line.split(" ")[1] ?? "", headers };
        received.push(req);
        const answer = table.get(req.path.replace(/\?.*$/, "")) ?? status(404, "Not Found");
        chain = chain.then(() => (socket.destroyed ? undefined : answer(socket, req))).catch(() => {});
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    received,
    count: (path) => received.filter((r) => r.path === path).length,
    route: (path, answer) => void table.set(path, answer),
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const text = (s: string | Uint8Array) => (typeof s === "string" ? Buffer.from(s, "latin1") : Buffer.from(s));

/** An honest 200 with Content-Length. */
export function ok(body: string | Uint8Array, headers: Record<string, string> = {}): Answer {
  const b = text(body);
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  return (s) => void s.write(Buffer.concat([text(`HTTP/1.1 200 OK\r\nContent-Length: ${b.length}\r\n${extra}\r\n`), b]));
}

/** A bodyless answer with `status`, e.g. 404, or a redirect with `location`. */
export function status(code: number, reason: string, location?: string): Answer {
  return (s) => void s.write(`HTTP/1.1 ${code} ${reason}\r\n${location !== undefined ? `Location: ${location}\r\n` : ""}Content-Length: 0\r\n\r\n`);
}

/**
 * Announces `announced` bytes and sends `body` in one write: more than announced (the extra
 * bytes follow the body on the connection), or fewer and then closes (`close: true`).
 */
export function liar(announced: number, body: string | Uint8Array, o: { close?: boolean } = {}): Answer {
  const b = Buffer.concat([text(`HTTP/1.1 200 OK\r\nContent-Length: ${announced}\r\n\r\n`), text(body)]);
  return (s) => void (o.close ? s.end(b) : s.write(b));
}

/**
 * Announces `announced` bytes (any number, e.g. 2**40) after `delayMs`, then sends chunks of
 * 64 KiB until the client hangs up or `cap` bytes are sent; `sent()` says how many were.
 * Without `announced`, the body is chunked (no Content-Length). `headers` are added (CORS's, for a page).
 * `ended()` resolves once it stops sending (the client hung up, or `cap`).
 */
export function flood(o: { announced?: number; delayMs?: number; cap?: number; headers?: Record<string, string> } = {}): Answer & { sent(): number; ended(): Promise<void> } {
  const chunk = Buffer.alloc(64 << 10, 0x5a);
  let sent = 0;
  let end = () => {};
  const ended = new Promise<void>((r) => (end = r));
  const answer = async (s: Socket) => {
    if (o.delayMs) await new Promise((r) => setTimeout(r, o.delayMs));
    const chunked = o.announced === undefined;
    const extra = Object.entries(o.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join("");
    s.write(`HTTP/1.1 200 OK\r\n${chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${o.announced}`}\r\n${extra}\r\n`);
    const frame = chunked ? Buffer.concat([text(`${chunk.length.toString(16)}\r\n`), chunk, text("\r\n")]) : chunk;
    while (!s.destroyed && sent < (o.cap ?? 256 << 20)) {
      sent += chunk.length;
      if (!s.write(frame)) await new Promise((r) => (s.once("drain", r), s.once("close", r)));
    }
    s.destroy();
    end();
  };
  return Object.assign(answer, { sent: () => sent, ended: () => ended });
}
