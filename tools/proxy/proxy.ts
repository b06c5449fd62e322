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

/** A stall or partition still in force: which lines of which connections it holds. */
interface Hold {
  spec: FaultSpec;
  hit: number[];
  lines: DelayLine[];
}

export async function startProxy(options: ProxyOptions): Promise<Proxy> {
  const proxy = new TcpProxy(checkOptions(options));
  await proxy.listen();
  return proxy;
}

/** The proxy: a listening server, the connections it accepted, and the faults in force. */
class TcpProxy implements Proxy {
  readonly host: string;
  port = 0;
  readonly #o: ProxyOptions;
  readonly #profileOf: ProfileFn;
  readonly #server: Server;
  readonly #conns: Link[] = [];
  readonly #holds = new Set<Hold>();
  #closing = false;
  #closed?: Promise<void>;

  constructor(o: ProxyOptions) {
    this.#o = o;
    this.#profileOf = typeof o.profile === "function" ? o.profile : () => o.profile as Profile;
    checkProfile(this.#profileOf(0), "start the proxy"); // a bad profile fails here, not on a connection
    this.host = o.listen?.host ?? "127.0.0.1";
    this.#server = createServer({ allowHalfOpen: true }, (client) => this.#accept(client));
  }

  async listen(): Promise<void> {
    const port = this.#o.listen?.port ?? 0;
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", (e: Error) =>
        reject(new CassetteError("ERR_INVALID_OPTION", `Cannot start the proxy as it cannot listen on ${this.host}:${port}: ${e.message}`, { cause: e }))
      );
      this.#server.listen(port, this.host, () => resolve());
    });
    const address = this.#server.address();
    this.port = typeof address === "object" && address ? address.port : 0;
  }

  stats(): ProxyStats {
    const connections = this.#conns.map((c) => ({ ...c.stats, queuedUp: c.up?.queuedBytes ?? 0, queuedDown: c.down?.queuedBytes ?? 0 }));
    return {
      at: runtime.now(),
      accepted: this.#conns.length,
      open: connections.filter((c) => c.closedAt === undefined).length,
      bytesUp: connections.reduce((s, c) => s + c.bytesUp, 0),
      bytesDown: connections.reduce((s, c) => s + c.bytesDown, 0),
      connections,
    };
  }

  fault(spec: FaultSpec): Fault {
    checkFault(spec, this.#conns.length);
    return spec.kind === "reset" ? this.#reset(spec) : this.#withhold(spec);
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing = true;
      this.#holds.clear();
      const listening = new Promise<void>((r) => this.#server.close(() => r()));
      for (const c of this.#conns) c.kill();
      await Promise.all(this.#conns.map((c) => c.closed));
      await listening;
    })();
    return this.#closed;
  }

  #accept(client: Socket): void {
    const link = new Link(client, this.#conns.length);
    this.#conns.push(link);
    if (this.#closing) return link.kill();
    let profile: Profile;
    try {
      profile = checkProfile(this.#profileOf(link.stats.index), `proxy connection ${link.stats.index}`);
    } catch (e) {
      return link.kill((e as Error).message);
    }
    link.start(profile, this.#o);
    for (const h of this.#holds) if (h.spec.connection === undefined || h.spec.connection === link.stats.index) this.#hold(h, link);
  }

  #reset(spec: FaultSpec): Fault {
    const open = (c: Link) => c.stats.closedAt === undefined;
    const targets = spec.connection === undefined ? this.#conns.filter(open) : [this.#conns[spec.connection]];
    if (spec.connection !== undefined && !open(targets[0])) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot reset proxy connection ${spec.connection} as it has closed`);
    }
    for (const c of targets) c.kill("fault: reset");
    return { kind: spec.kind, connections: targets.map((c) => c.stats.index), healed: true, heal() {} };
  }

  /** A stall or a partition: on the connections open now and, until healed, on those accepted after. */
  #withhold(spec: FaultSpec): Fault {
    const h: Hold = { spec, hit: [], lines: [] };
    this.#holds.add(h);
    const now = spec.connection === undefined ? this.#conns : this.#conns.slice(spec.connection, spec.connection + 1);
    for (const c of now) if (c.stats.closedAt === undefined) this.#hold(h, c);
    let healed = false;
    const holds = this.#holds;
    return {
      kind: spec.kind,
      direction: spec.direction,
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

  #hold(h: Hold, link: Link): void {
    const lines = link.heldLines(h.spec);
    if (lines.length === 0) return; // failed before its lines existed (bad profile, closing)
    for (const l of lines) l.hold();
    h.lines.push(...lines);
    h.hit.push(link.stats.index);
  }
}

/**
 * One accepted client wired to its own upstream connection through two delay lines (up:
 * client → target, down: target → client). Closed once both sides have closed.
 */
class Link {
  readonly stats: ConnectionStats;
  up?: DelayLine;
  down?: DelayLine;
  /** Resolves once both sides have closed. */
  readonly closed: Promise<void>;
  readonly #client: Socket;
  #upstream?: Socket;
  #connectTimer?: ReturnType<typeof setTimeout>;
  #clientClosed = false;
  #upstreamClosed = false;
  #resolveClosed!: () => void;

  constructor(client: Socket, index: number) {
    this.#client = client;
    this.stats = { index, profile: { delayMs: 0 }, openedAt: runtime.now(), bytesUp: 0, bytesDown: 0, queuedUp: 0, queuedDown: 0 };
    this.closed = new Promise((r) => (this.#resolveClosed = r));
    client.on("error", (e: Error) => this.kill(`client: ${e.message}`));
    client.on("close", (hadError: boolean) => {
      this.#clientClosed = true;
      this.down?.stop(); // nobody left to deliver to
      if (hadError) this.kill("client reset the connection");
      else this.up?.pushEnd(); // closed without a FIN of its own: the upstream still gets one, after the data
      this.#finish();
    });
  }

  /** Destroys both sides now; `reason` (if any) is recorded as the connection's error. */
  kill(reason?: string): void {
    if (reason !== undefined) this.stats.error ??= reason;
    this.up?.stop();
    this.down?.stop();
    // A failure reaches the other side as a reset, as it would through a router; close() ends with a FIN.
    const end = reason === undefined ? destroy : reset;
    end(this.#client);
    if (this.#upstream) end(this.#upstream);
    else {
      clearTimeout(this.#connectTimer); // the upstream will never open
      this.#upstreamClosed = true;
      this.#finish();
    }
  }

  /** The lines a stall or partition holds here: up, down, or both. */
  heldLines(spec: FaultSpec): DelayLine[] {
    const lines = spec.kind === "stall" ? [this.up, this.down] : spec.direction === "up" ? [this.up] : [this.down];
    return lines.filter((l): l is DelayLine => l !== undefined);
  }

  /** The delay lines of `profile`, then the upstream connection: after a one-way delay when the handshake is modelled (the SYN takes delayMs to reach the server). */
  start(profile: Profile, o: ProxyOptions): void {
    this.stats.profile = profile;
    const client = this.#client, t0 = this.stats.openedAt, handshake = o.handshake ?? true;
    client.setNoDelay(true);
    const random = rng(profile.seed ?? 1, this.stats.index);
    const line = (onForward: (n: number) => void, source: () => Socket | undefined, notBefore?: number) =>
      new DelayLine({
        delayMs: profile.delayMs,
        jitterMs: profile.jitterMs,
        bandwidthBytesPerSec: profile.bandwidthBytesPerSec,
        random: random.next,
        notBefore,
        maxQueued: o.queueBytes ?? DEFAULT_QUEUE,
        onPause: () => source()?.pause(),
        onResume: () => source()?.resume(),
        onForward,
      });
    const up = (this.up = line((n) => (this.stats.bytesUp += n), () => client, handshake ? t0 + 2 * profile.delayMs : undefined));
    const down = (this.down = line((n) => (this.stats.bytesDown += n), () => this.#upstream));
    down.attach(client);
    client.on("data", (d: Uint8Array) => up.push(d));
    client.on("end", () => up.pushEnd());
    client.on("drain", () => down.drained());
    if (handshake && profile.delayMs > 0) this.#connectTimer = setTimeout(() => this.#openUpstream(o.target), profile.delayMs);
    else this.#openUpstream(o.target);
  }

  #openUpstream(target: Endpoint): void {
    this.#connectTimer = undefined;
    const up = this.up!, down = this.down!;
    const s = (this.#upstream = connect({ host: target.host, port: target.port, allowHalfOpen: true }));
    s.setNoDelay(true);
    s.on("connect", () => {
      this.stats.connectedAt = runtime.now();
      up.attach(s);
    });
    s.on("data", (d: Uint8Array) => {
      // Data for a client that has gone: a real peer would answer with a reset.
      if (this.#clientClosed) reset(s);
      else down.push(d);
    });
    s.on("end", () => down.pushEnd());
    s.on("drain", () => up.drained());
    s.on("error", (e: Error) => this.kill(`upstream ${target.host}:${target.port}: ${e.message}`));
    s.on("close", (hadError: boolean) => {
      this.#upstreamClosed = true;
      up.stop();
      if (hadError) this.kill("upstream reset the connection");
      this.#finish();
    });
  }

  #finish(): void {
    if (!this.#clientClosed || !this.#upstreamClosed || this.stats.closedAt !== undefined) return;
    this.stats.closedAt = runtime.now();
    this.#resolveClosed();
  }
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
