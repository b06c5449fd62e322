/**
 * A TCP latency proxy: the kernel of the development machines has no `tc netem`, so benchmarks
 * and tests put this between cassette and a real server to get "Hiding Latencies…"
 * (arXiv:2503.22643)'s round trips (0, 20, 150 ms) and uneven connections. Each accepted connection
 * gets its own profile (delay, jitter, bandwidth cap); each direction is a DelayLine
 * (delay_line.ts), so a stream is delayed, not throttled to bytes-per-round-trip.
 *
 * ```ts
 * const proxy = await startProxy({ target: { host: "127.0.0.1", port: 9042 }, profile: uniform(75) });
 * // connect to proxy.host:proxy.port: every round trip is ≥ 150 ms longer
 * console.table(proxy.stats().connections);
 * await proxy.close();
 * ```
 *
 * Connection set-up costs one round trip, as TCP's handshake does (`handshake`, default on):
 * the upstream connect starts delayMs after the accept and the client's first byte cannot
 * leave before 2 × delayMs. A FIN is forwarded after the data queued before it; an error or
 * reset on either side resets both sides at once (a refused upstream connect reaches the client
 * as a reset, since the proxy has already accepted it).
 *
 * Faults, on a running proxy (`fault()`): a reset, a stall, a one-way partition, on one
 * connection or on all of them, each healed by its handle, so tests and the chaos benchmark
 * break real connections to a real server at a moment of their choosing.
 *
 * ```ts
 * const f = proxy.fault({ kind: "partition", direction: "up" }); // requests vanish, answers still come
 * // …
 * f.heal(); // what was withheld leaves now, in order
 * ```
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../../src/errors.ts";
import { rng } from "../../src/plan/rng.ts";
import { DelayLine } from "./delay_line.ts";
import { checkProfile, type Profile, type ProfileFn } from "./profile.ts";

export { capAt, checkProfile, type Profile, type ProfileFn, unevenEvery, uniform } from "./profile.ts";

export interface Endpoint {
  host: string;
  port: number;
}

export interface ProxyOptions {
  /** The real server. */
  target: Endpoint;
  /** Where the proxy listens (default 127.0.0.1, port 0 = any free port). */
  listen?: { host?: string; port?: number };
  /** The profile of each accepted connection, by accept order (a fixed Profile also works). */
  profile: ProfileFn | Profile;
  /**
   * Bytes one direction of one connection may hold before the proxy stops reading from its
   * source (default 4 MiB, about a Linux TCP window): memory stays bounded, and throughput per
   * connection is at most queueBytes / delay, as with a real window.
   */
  queueBytes?: number;
  /** Connection set-up costs one round trip, as TCP's handshake (default true). */
  handshake?: boolean;
}

export interface ConnectionStats {
  /** Accept order, the argument the profile function got. */
  index: number;
  profile: Profile;
  /** runtime.now() when the proxy accepted the client. */
  openedAt: number;
  /** runtime.now() when the upstream connection was established. */
  connectedAt?: number;
  /** runtime.now() when both sides had closed. */
  closedAt?: number;
  /** Bytes forwarded client → target. */
  bytesUp: number;
  /** Bytes forwarded target → client. */
  bytesDown: number;
  /** Bytes waiting in the proxy right now, each way. */
  queuedUp: number;
  queuedDown: number;
  /** Why the connection failed, if it did (connect refused, reset, bad profile). */
  error?: string;
}

/**
 * A fault on a running proxy.
 *
 * - `reset`: both sides of the connection get a TCP RST now (data in flight is lost, mid-stream
 *   if it was flowing), as when a router or the peer's kernel drops the connection.
 * - `stall`: nothing is forwarded either way, both sockets stay open, until healed: a peer
 *   that hangs with its connections up (a frozen process, a dead link without keepalive).
 * - `partition`: one direction only is withheld: `up` (client → target: requests never arrive,
 *   the target's own pushes still reach the client) or `down` (target → client).
 *
 * Withheld bytes are kept, not dropped (the proxy pauses reading once `queueBytes` are held, as
 * a full TCP window stops a sender), and leave in order on heal: TCP retransmits what a
 * partition ate, so dropping bytes mid-stream would corrupt the stream, which no real network does.
 */
export interface FaultSpec {
  kind: "reset" | "stall" | "partition";
  /**
   * The connection (its accept index, as in stats) or, when absent, every connection: for a
   * reset those open now; for a stall or a partition also those accepted until it heals (a
   * frozen server still accepts TCP, then says nothing).
   */
  connection?: number;
  /** For a partition: which direction is cut. */
  direction?: "up" | "down";
}

export interface Fault {
  readonly kind: FaultSpec["kind"];
  readonly direction?: "up" | "down";
  /** Indices of the connections it has hit so far. */
  readonly connections: readonly number[];
  /** True once healed (a reset is healed from the start: there is nothing to undo). */
  readonly healed: boolean;
  /** Lets withheld bytes go and stops catching new connections; safe to call twice. */
  heal(): void;
}

export interface ProxyStats {
  /** runtime.now() of this snapshot: rates come from two snapshots' bytes and `at`. */
  at: number;
  accepted: number;
  open: number;
  bytesUp: number;
  bytesDown: number;
  connections: ConnectionStats[];
}

export interface Proxy {
  /** Where clients connect. */
  readonly host: string;
  readonly port: number;
  /** A snapshot of every connection so far, open or closed. */
  stats(): ProxyStats;
  /**
   * Injects a fault now (FaultSpec). A reset of a connection index not accepted yet, or already
   * closed, throws ERR_INVALID_OPTION; a stall or partition of a future index waits for it.
   */
  fault(spec: FaultSpec): Fault;
  /** Stops listening, destroys every connection; resolves once all sockets have closed. */
  close(): Promise<void>;
}

const DEFAULT_QUEUE = 4 * 1024 * 1024;

interface Conn {
  stats: ConnectionStats;
  up?: DelayLine;
  down?: DelayLine;
  /** Destroys both sides now; `reason` (if any) is recorded as the connection's error. */
  kill(reason?: string): void;
  /** Resolves once both sides have closed. */
  closed: Promise<void>;
}

/** A stall or partition still in force: which lines of which connections it holds. */
interface Hold {
  spec: FaultSpec;
  hit: number[];
  lines: DelayLine[];
}

/** The lines a stall or partition holds on `conn`: up (client → target), down, or both. */
function heldLines(conn: Conn, spec: FaultSpec): DelayLine[] {
  const lines = spec.kind === "stall" ? [conn.up, conn.down] : spec.direction === "up" ? [conn.up] : [conn.down];
  return lines.filter((l): l is DelayLine => l !== undefined);
}

export async function startProxy(options: ProxyOptions): Promise<Proxy> {
  const o = checkOptions(options);
  const profileOf: ProfileFn = typeof o.profile === "function" ? o.profile : () => o.profile as Profile;
  checkProfile(profileOf(0), "start the proxy"); // a bad profile fails here, not on a connection
  const queueBytes = o.queueBytes ?? DEFAULT_QUEUE;
  const handshake = o.handshake ?? true;
  const conns: Conn[] = [];
  const holds = new Set<Hold>();
  let closing = false;

  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    const conn = handle(client, conns.length);
    conns.push(conn);
    for (const h of holds) if (h.spec.connection === undefined || h.spec.connection === conn.stats.index) hold(h, conn);
  });

  function hold(h: Hold, conn: Conn): void {
    const lines = heldLines(conn, h.spec);
    if (lines.length === 0) return; // failed before its lines existed (bad profile, closing)
    for (const l of lines) l.hold();
    h.lines.push(...lines);
    h.hit.push(conn.stats.index);
  }

  function fault(spec: FaultSpec): Fault {
    checkFault(spec, conns.length);
    const { kind, direction } = spec;
    const open = (c: Conn) => c.stats.closedAt === undefined;
    if (kind === "reset") {
      const targets = spec.connection === undefined ? conns.filter(open) : [conns[spec.connection]];
      if (spec.connection !== undefined && !open(targets[0])) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot reset proxy connection ${spec.connection} as it has closed`);
      }
      for (const c of targets) c.kill("fault: reset");
      return { kind, connections: targets.map((c) => c.stats.index), healed: true, heal() {} };
    }
    const h: Hold = { spec, hit: [], lines: [] };
    holds.add(h);
    const now = spec.connection === undefined ? conns : conns.slice(spec.connection, spec.connection + 1);
    for (const c of now) if (open(c)) hold(h, c);
    let healed = false;
    return {
      kind,
      direction,
      get connections() {
        return h.hit.slice();
      },
      get healed() {
        return healed;
      },
      heal() {
        if (healed) return;
        healed = true;
        holds.delete(h);
        for (const l of h.lines) l.unhold();
        h.lines = [];
      },
    };
  }

  /** Wires one accepted client to a new upstream connection through two delay lines. */
  function handle(client: Socket, index: number): Conn {
    const t0 = runtime.now();
    let upstream: Socket | undefined;
    let connectTimer: ReturnType<typeof setTimeout> | undefined;
    let clientClosed = false, upstreamClosed = false;
    let resolveClosed!: () => void;
    const conn: Conn = {
      stats: { index, profile: { delayMs: 0 }, openedAt: t0, bytesUp: 0, bytesDown: 0, queuedUp: 0, queuedDown: 0 },
      closed: new Promise((r) => (resolveClosed = r)),
      kill(reason) {
        if (reason !== undefined) conn.stats.error ??= reason;
        conn.up?.stop();
        conn.down?.stop();
        // A failure reaches the other side as a reset, as it would through a router; close() ends with a FIN.
        const end = reason === undefined ? destroy : reset;
        end(client);
        if (upstream) end(upstream);
        else {
          clearTimeout(connectTimer); // the upstream will never open
          upstreamClosed = true;
          finish();
        }
      },
    };
    const finish = () => {
      if (!clientClosed || !upstreamClosed || conn.stats.closedAt !== undefined) return;
      conn.stats.closedAt = runtime.now();
      resolveClosed();
    };
    client.on("error", (e: Error) => conn.kill(`client: ${e.message}`));
    client.on("close", (hadError: boolean) => {
      clientClosed = true;
      conn.down?.stop(); // nobody left to deliver to
      if (hadError) conn.kill("client reset the connection");
      else conn.up?.pushEnd(); // closed without a FIN of its own: the upstream still gets one, after the data
      finish();
    });
    if (closing) {
      conn.kill();
      return conn;
    }

    let profile: Profile;
    try {
      profile = checkProfile(profileOf(index), `proxy connection ${index}`);
    } catch (e) {
      conn.kill((e as Error).message);
      return conn;
    }
    conn.stats.profile = profile;
    client.setNoDelay(true);
    const random = rng(profile.seed ?? 1, index);
    const line = (onForward: (n: number) => void, source: () => Socket | undefined, notBefore?: number) =>
      new DelayLine({
        delayMs: profile.delayMs,
        jitterMs: profile.jitterMs,
        bandwidthBytesPerSec: profile.bandwidthBytesPerSec,
        random: random.next,
        notBefore,
        maxQueued: queueBytes,
        onPause: () => source()?.pause(),
        onResume: () => source()?.resume(),
        onForward,
      });
    const up = line((n) => (conn.stats.bytesUp += n), () => client, handshake ? t0 + 2 * profile.delayMs : undefined);
    const down = line((n) => (conn.stats.bytesDown += n), () => upstream);
    conn.up = up;
    conn.down = down;
    down.attach(client);
    client.on("data", (d: Uint8Array) => up.push(d));
    client.on("end", () => up.pushEnd());
    client.on("drain", () => down.drained());

    const openUpstream = () => {
      connectTimer = undefined;
      const s = connect({ host: o.target.host, port: o.target.port, allowHalfOpen: true });
      upstream = s;
      s.setNoDelay(true);
      s.on("connect", () => {
        conn.stats.connectedAt = runtime.now();
        up.attach(s);
      });
      s.on("data", (d: Uint8Array) => {
        // Data for a client that has gone: a real peer would answer with a reset.
        if (clientClosed) reset(s);
        else down.push(d);
      });
      s.on("end", () => down.pushEnd());
      s.on("drain", () => up.drained());
      s.on("error", (e: Error) => conn.kill(`upstream ${o.target.host}:${o.target.port}: ${e.message}`));
      s.on("close", (hadError: boolean) => {
        upstreamClosed = true;
        up.stop();
        if (hadError) conn.kill("upstream reset the connection");
        finish();
      });
    };
    // The SYN takes delayMs to reach the server.
    if (handshake && profile.delayMs > 0) connectTimer = setTimeout(openUpstream, profile.delayMs);
    else openUpstream();
    return conn;
  }

  const listenHost = o.listen?.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", (e: Error) =>
      reject(new CassetteError("ERR_INVALID_OPTION", `Cannot start the proxy as it cannot listen on ${listenHost}:${o.listen?.port ?? 0}: ${e.message}`, { cause: e }))
    );
    server.listen(o.listen?.port ?? 0, listenHost, () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  let closed: Promise<void> | undefined;

  return {
    host: listenHost,
    port,
    stats() {
      const connections = conns.map((c) => ({
        ...c.stats,
        queuedUp: c.up?.queuedBytes ?? 0,
        queuedDown: c.down?.queuedBytes ?? 0,
      }));
      return {
        at: runtime.now(),
        accepted: conns.length,
        open: connections.filter((c) => c.closedAt === undefined).length,
        bytesUp: connections.reduce((s, c) => s + c.bytesUp, 0),
        bytesDown: connections.reduce((s, c) => s + c.bytesDown, 0),
        connections,
      };
    },
    fault,
    close() {
      closed ??= (async () => {
        closing = true;
        holds.clear();
        const listening = new Promise<void>((r) => server.close(() => r()));
        for (const c of conns) c.kill();
        await Promise.all(conns.map((c) => c.closed));
        await listening;
      })();
      return closed;
    },
  };
}

function destroy(s: Socket): void {
  s.destroy();
}

function reset(s: Socket): void {
  if (s.destroyed) return;
  try {
    s.resetAndDestroy();
  } catch {
    s.destroy();
  }
}

function checkFault(f: FaultSpec, accepted: number): void {
  const bad = (name: string, rule: string, value: unknown): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot inject the proxy fault as '${name}' must be ${rule}: current value is ${value}`);
  };
  if (!f || !["reset", "stall", "partition"].includes(f.kind)) bad("kind", "reset, stall or partition", f?.kind);
  if (f.connection !== undefined && (!Number.isInteger(f.connection) || f.connection < 0)) bad("connection", "a connection index ≥ 0", f.connection);
  if (f.kind === "reset" && f.connection !== undefined && f.connection >= accepted) {
    bad("connection", `an index the proxy has accepted (0..${accepted - 1}) for a reset`, f.connection);
  }
  if (f.kind === "partition" && f.direction !== "up" && f.direction !== "down") bad("direction", "up or down for a partition", f.direction);
  if (f.kind !== "partition" && f.direction !== undefined) bad("direction", `absent for a ${f.kind}`, f.direction);
}

function checkOptions(o: ProxyOptions): ProxyOptions {
  const bad = (name: string, rule: string, value: unknown): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot start the proxy as '${name}' must be ${rule}: current value is ${value}`);
  };
  const port = (v: unknown) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 65535;
  if (!o?.target || typeof o.target.host !== "string" || !o.target.host) bad("target.host", "a host name or address", o?.target?.host);
  if (!port(o.target.port) || o.target.port === 0) bad("target.port", "an integer in 1..65535", o.target.port);
  if (o.listen?.port !== undefined && !port(o.listen.port)) bad("listen.port", "an integer in 0..65535 (0: any)", o.listen.port);
  if (typeof o.profile !== "function" && (typeof o.profile !== "object" || o.profile === null)) {
    bad("profile", "a function (connIndex) => Profile or a Profile", o.profile);
  }
  if (o.queueBytes !== undefined && (!Number.isInteger(o.queueBytes) || o.queueBytes < 1)) bad("queueBytes", "a positive integer", o.queueBytes);
  return o;
}
