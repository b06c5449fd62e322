/**
 * Opens a cassandra-driver Client for a `cassandra://` address, with errors that say which
 * host did not answer, and a deadline: a host that accepts TCP but never speaks CQL gives a
 * clear error after `connectTimeoutMs`, not a hang.
 *
 * Bun and Deno run the driver through their Node compatibility. Checked with Bun 1.4.5 and
 * Deno 2.9.5 against Cassandra 5.0.8 (test/source/cassandra.test.ts): connect, schema,
 * prepared writes and reads of blobs work with no workaround. The old Bun failures
 * (oven-sh/bun#4033, #4815: NoHostAvailableError) came from protocol negotiation; the protocol
 * is capped at v4 now (the driver's PR #416), to save the refused first offer (`maxProtocolVersion`).
 */
import cassandra from "cassandra-driver";
import { connect as tcpConnect } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { CassetteError } from "../../errors.ts";
import { runtime } from "../../../runtime-adapters/index.ts";
import { type CassandraAddress, redact } from "../address.ts";
import { cassandraAddress } from "./address.ts";
import { caWouldHelp, UNTRUSTED_CERT_CODES } from "../tls_trust.ts";

/** How cassette connects to Cassandra: the driver's options, timeouts, protocol version, keyspace and TLS. */
export interface CassandraOptions {
  /**
   * cassandra-driver client options, merged over cassette's (pooling, policies, socket options
   * …): the driver's own settings are passed through, not reimplemented.
   */
  driver?: Partial<cassandra.ClientOptions>;
  /** Give up connecting after this long (default 10 s). */
  connectTimeoutMs?: number;
  /**
   * Cap the native protocol version (e.g. 3); default 4, the newest the driver speaks to Apache
   * Cassandra and ScyllaDB: left to negotiate, it offers DataStax Enterprise's v2 first, and the
   * refusal costs every client a connection and a round trip (~0.3 s at 150 ms). A node that
   * speaks only an older version still negotiates down.
   */
  maxProtocolVersion?: number;
  /** Connect without setting the keyspace (to create it). */
  withoutKeyspace?: boolean;
  /**
   * TLS to the nodes, as the address's `tls=1&ca=FILE&cert=FILE&key=FILE` (a field set here
   * wins over the address's): `true` for TLS with the system's CAs, or the paths of PEM files:
   * `ca`, the CA that signed the nodes' certificates; `cert` and `key`, the client's certificate
   * and key, for nodes that require one (mutual TLS). The node's certificate must name the
   * address it is reached at (subjectAltName). `driver.sslOptions`, if given, is merged over these.
   */
  tls?: boolean | CassandraTls;
}

/** PEM files for TLS to Cassandra (CassandraOptions.tls). */
export interface CassandraTls {
  /** Path of the PEM file of the CA that signed the nodes' certificates. */
  ca?: string;
  /** Path of the client's certificate (PEM), for nodes that require one. */
  cert?: string;
  /** Path of the client's key (PEM), for nodes that require a certificate. */
  key?: string;
}

/** local_quorum → localQuorum: the driver's names for the levels an address spells in snake case. */
function snakeToCamel(level: string): keyof typeof cassandra.types.consistencies {
  return level.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()) as keyof typeof cassandra.types.consistencies;
}

/**
 * The driver's Client with `options`: the options it runs with (ours over its defaults), which
 * client.js sets in its constructor and index.d.ts leaves out.
 */
export type CassandraClient = cassandra.Client & { readonly options: cassandra.ClientOptions };

/**
 * Connections per local host when the address does not say (`connections=N`): two to start,
 * so that a connection on a congested route has a neighbour to take its share (the 2025
 * paper, §3.3), and more, up to the max, while a source's requests wait for a free slot
 * (src/source/cassandra/cassandra_source.ts): what is in flight grows with latency × rate through the
 * loader's window, and the connections follow it. A far store (a read statement's preparation
 * took `farMs` or more) gets `far` at once: two connections' 4 096 slots cap a reader at
 * 150 ms to ~27 000 samples/s, and the driver opens connections one after another, each ~3
 * round trips (~0.45 s at 150 ms), so growing only on demand left the first epoch short of
 * slots for a second and more.
 */
export const ADAPTIVE_CONNECTIONS = { start: 2, far: 4, farMs: 50, max: 8 } as const;
const adaptive = new WeakSet<cassandra.Client>();
/** Whether this client's connections per host were left to cassette (no `connections=` nor driver pooling). */
export function adaptsConnections(client: cassandra.Client): boolean {
  return adaptive.has(client);
}
export const cassandraTypes = cassandra.types;

/** Connects to the nodes of `address` (`parsed`: the same address, parsed already by the caller). */
export async function openCassandra(address: string, options: CassandraOptions = {}, parsed?: CassandraAddress): Promise<CassandraClient> {
  const a = cassandraAddress(address, parsed);
  const timeout = options.connectTimeoutMs ?? 10_000;
  const login = credentials(a);
  const tls = await tlsOptions(address, a, options.tls);
  const client = new cassandra.Client(await clientOptions(a, options, tls, login, timeout)) as CassandraClient;
  if (!a.connections && !options.driver?.pooling?.coreConnectionsPerHost) adaptive.add(client);
  const where = `${a.hosts.join(",")}:${a.port}`;
  try {
    await connectWithin(client, where, timeout, a.hosts.length);
    return client;
  } catch (cause) {
    await client.shutdown().catch(() => {});
    throw await connectError(cause, { a, where, tls, username: login.username, timeout, withoutKeyspace: options.withoutKeyspace });
  }
}

/** Credentials: from the address, else from the environment (so they need not be typed). */
function credentials(a: CassandraAddress): { username?: string; password: string } {
  const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {};
  return { username: a.username ?? env.CASSETTE_CASSANDRA_USER, password: a.password ?? env.CASSETTE_CASSANDRA_PASSWORD ?? "" };
}

/** The driver's options: cassette's, with `options.driver`'s over them. */
async function clientOptions(
  a: CassandraAddress, options: CassandraOptions, tls: TlsSetup | undefined, login: { username?: string; password: string }, timeout: number,
): Promise<cassandra.ClientOptions> {
  const d = options.driver ?? {};
  return {
    ...d,
    contactPoints: a.hosts.length > 1 && !tls && !d.contactPoints ? await answeringFirst(a.hosts, a.port, Math.min(2000, timeout)) : a.hosts,
    localDataCenter: a.dc,
    keyspace: options.withoutKeyspace ? undefined : a.keyspace,
    protocolOptions: { port: a.port, maxVersion: options.maxProtocolVersion ?? cassandra.types.protocolVersion.v4, ...d.protocolOptions },
    socketOptions: { connectTimeout: timeout, readTimeout: 30_000, ...d.socketOptions },
    credentials: d.credentials ?? (login.username ? { username: login.username, password: login.password } : undefined),
    sslOptions: tls ? { ...tls.ssl, ...d.sslOptions } : d.sslOptions,
    // A statement is prepared on the node that runs it, and on another node when it first
    // answers "unprepared": preparing on every node first (the driver's default) waits for all
    // of them, so one frozen node held every new client's first read for the 30 s read timeout.
    prepareOnAllHosts: d.prepareOnAllHosts ?? false,
    // The address's consistency (default LOCAL_ONE: a read needs one replica of the local DC).
    queryOptions: { consistency: cassandra.types.consistencies[snakeToCamel(a.consistency)], ...d.queryOptions },
    pooling: {
      heartBeatInterval: 10_000,
      coreConnectionsPerHost: { [cassandra.types.distance.local]: a.connections ?? ADAPTIVE_CONNECTIONS.start, [cassandra.types.distance.remote]: 1 },
      ...(a.requests ? { maxRequestsPerConnection: a.requests } : {}),
      ...d.pooling,
    },
  };
}

/** `client.connect()`, or a named error once no node answered in time. */
async function connectWithin(client: cassandra.Client, where: string, timeout: number, hosts: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new CassetteError("ERR_STORE_UNREACHABLE", `Cannot connect to Cassandra at ${where} as no node answered CQL within ${timeout} ms each`)),
          // Each contact point gets its connect timeout: the driver tries them one after another,
          // so a first one frozen (SIGSTOP) must not use up the next one's time. The driver's own
          // timeout usually fires first, with its detail.
          timeout * hosts + 1000,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** What a failed connect was: the named error that says why (TLS, a plaintext client at a TLS node, a login, a keyspace, an unreachable node). */
async function connectError(
  cause: unknown,
  c: { a: CassandraAddress; where: string; tls: TlsSetup | undefined; username?: string; timeout: number; withoutKeyspace?: boolean },
): Promise<CassetteError> {
  const { a, where, tls, username, timeout } = c;
  const e = cause as Error & { innerErrors?: Record<string, Error> };
  const inner = e.innerErrors ? Object.values(e.innerErrors) : [e];
  const detail = e.innerErrors ? Object.entries(e.innerErrors).map(([h, err]) => `${h}: ${err.message}`).join("; ") : e.message;
  let tlsError = tls ? tlsRefusal(inner, where, tls) : undefined;
  // A node that refuses the client's certificate (or its absence) sends its alert after the
  // handshake; when the driver writes first, it sees only the closed socket (Deno: "write
  // EPIPE"). Ask the node again, writing nothing, to hear why.
  if (tls && !tlsError && inner.some((err) => /EPIPE|ECONNRESET|hang up|closed|close_notify|eof/i.test(`${err.message} ${(err as { code?: string }).code ?? ""}`))) {
    const heard = await tlsVerdict(a.hosts[0], a.port, tls.ssl, Math.min(2000, timeout));
    if (heard === "closed") tlsError = clientCertRefused(where, tls, "it closed the connection right after the TLS handshake");
    else if (heard) tlsError = tlsRefusal([heard], where, tls);
  }
  if (tlsError) return new CassetteError(tlsError.code, tlsError.message, { cause });
  // A node that requires TLS closes a plaintext connection without a word of CQL: the driver
  // says "socket hang up", a reset or a timeout. Ask the node for a TLS handshake to tell.
  if (!tls && !inner.some((err) => /auth|credential|password|keyspace/i.test(err.message)) && (await speaksTls(a.hosts[0], a.port, Math.min(2000, timeout)))) {
    return new CassetteError(
      "ERR_STORE_UNREACHABLE",
      `Cannot connect to Cassandra at ${where} as the node requires TLS and the address asks for plaintext: add tls=1 ` +
        `(and ca=FILE, the CA that signed the node's certificate) to the address, or the 'tls' option (driver: ${detail})`,
      { cause },
    );
  }
  if (cause instanceof CassetteError) return cause;
  const keyspaceMissing = /keyspace/i.test(detail) && !c.withoutKeyspace;
  if (/auth|credential|password|username/i.test(detail)) {
    return new CassetteError(
      "ERR_STORE",
      `Cannot log in to Cassandra at ${where} as ${username ? `user '${username}'` : "no user"}: ${detail} ` +
        "(credentials come from the address, or CASSETTE_CASSANDRA_USER and CASSETTE_CASSANDRA_PASSWORD)",
      { cause },
    );
  }
  return new CassetteError(
    keyspaceMissing ? "ERR_STORE" : "ERR_STORE_UNREACHABLE",
    keyspaceMissing
      ? `Cannot use keyspace '${a.keyspace}' at ${where}: ${detail}`
      : `Cannot connect to Cassandra at ${where} (datacenter '${a.dc}'): ${detail}. Is it running? (cassette cassandra status)`,
    { cause },
  );
}

/** What openCassandra connects with when TLS is on: the driver's sslOptions, and which files gave them. */
interface TlsSetup {
  ssl: NonNullable<cassandra.ClientOptions["sslOptions"]>;
  ca?: string;
  cert?: string;
}

/**
 * The address's TLS settings with `option`'s over them, files read: undefined when TLS is off.
 * A file that cannot be read, or is not PEM, is a named error that says which parameter named it.
 */
async function tlsOptions(address: string, a: { tls: boolean; ca?: string; cert?: string; key?: string }, option: CassandraOptions["tls"]): Promise<TlsSetup | undefined> {
  const o = typeof option === "object" ? option : {};
  const ca = o.ca ?? a.ca, cert = o.cert ?? a.cert, key = o.key ?? a.key;
  const on = option === true || typeof option === "object" || (option !== false && a.tls);
  if (!on) return undefined;
  if ((cert === undefined) !== (key === undefined)) {
    throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use TLS to '${redact(address)}' as a client certificate needs both 'cert' and 'key': only '${cert === undefined ? "key" : "cert"}' is given`);
  }
  const read = async (param: string, path: string | undefined, what: RegExp): Promise<string | undefined> => {
    if (path === undefined) return undefined;
    const from = o[param as keyof CassandraTls] !== undefined ? `the tls.${param} option` : `${param}=`;
    let text: string;
    try {
      text = new TextDecoder().decode(await runtime.readFile(path));
    } catch (e) {
      throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use TLS to '${redact(address)}' as the file '${path}' (${from}) cannot be read: ${(e as Error).message}`, { cause: e });
    }
    if (!what.test(text)) throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use TLS to '${redact(address)}' as the file '${path}' (${from}) is not a PEM ${param === "key" ? "private key" : "certificate"}`);
    return text;
  };
  const caText = await read("ca", ca, /-----BEGIN CERTIFICATE-----/);
  const certText = await read("cert", cert, /-----BEGIN CERTIFICATE-----/);
  const keyText = await read("key", key, /-----BEGIN [A-Z ]*PRIVATE KEY-----/);
  // The driver turns certificate checks off unless told (lib/connection.js: rejectUnauthorized
  // false): cassette checks them. Node checks an IP address against the certificate's IP
  // subjectAltName, and sends no SNI for one (RFC 6066 allows host names only).
  const ssl: TlsSetup["ssl"] = { rejectUnauthorized: true };
  if (caText) ssl.ca = [caText];
  if (certText) Object.assign(ssl, { cert: certText, key: keyText });
  return { ssl, ca, cert };
}


/** A TLS failure among a connect's errors, explained: the node's certificate, or the client's. */
function tlsRefusal(errors: Error[], where: string, tls: TlsSetup): { code: "ERR_TLS_UNTRUSTED" | "ERR_STORE_UNREACHABLE"; message: string } | undefined {
  for (const err of errors) {
    const code = String((err as { code?: unknown }).code ?? "");
    const msg = err.message.trim();
    const text = `${msg} ${code}`;
    // Mutual TLS: the node asks for a certificate, and one not sent (or not signed by its CA)
    // ends the handshake with an alert (TLS 1.3: certificate_required; 1.2: handshake failure).
    if (/certificate.?required|certificate.?unknown|bad.?certificate|unknown.?ca|handshake.?fail|peer did not return a certificate/i.test(text) && !UNTRUSTED_CERT_CODES.has(code)) {
      return clientCertRefused(where, tls, msg);
    }
    // Cassandra's TLS (netty with BoringSSL) answers a client certificate its trust manager
    // rejects with internal_error, not bad_certificate: with a certificate sent, say so.
    if (tls.cert && /alert.?internal.?error|InternalError/i.test(text)) {
      return {
        code: "ERR_STORE_UNREACHABLE",
        message: `Cannot connect to Cassandra at ${where} over TLS as the node ended the handshake after the client certificate '${tls.cert}' was sent: ` +
          `a node that requires client certificates does so for one that no CA it trusts signed (${msg})`,
      };
    }
    if (UNTRUSTED_CERT_CODES.has(code) || /certificate|UnknownIssuer|self.signed/i.test(text)) {
      const hint = !caWouldHelp(code)
        ? ""
        : tls.ca
        ? `; the CA '${tls.ca}' (ca=) did not sign it: give the CA that did`
        : "; give the CA that signed it with ca=FILE in the address or the 'tls' option's ca";
      return { code: "ERR_TLS_UNTRUSTED", message: `Cannot connect to Cassandra at ${where} as the server's TLS certificate is not trusted: ${msg}${code && !msg.includes(code) ? ` (${code})` : ""}${hint}` };
    }
  }
  return undefined;
}

/** The node refused the client's certificate, or its absence: say which, and what to give. */
function clientCertRefused(where: string, tls: TlsSetup, detail: string): { code: "ERR_STORE_UNREACHABLE"; message: string } {
  return {
    code: "ERR_STORE_UNREACHABLE",
    message: tls.cert
      ? `Cannot connect to Cassandra at ${where} over TLS as the node refused the client certificate '${tls.cert}': it takes one that a CA it trusts signed (${detail})`
      : `Cannot connect to Cassandra at ${where} over TLS as the node requires a client certificate: give cert=FILE and key=FILE in the address, or the 'tls' option's cert and key (${detail})`,
  };
}

/** Whether `host:port` answers a TLS handshake within `ms`: a node that refused plaintext. */
function speaksTls(host: string, port: number, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (v: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(v);
    };
    // Only asks whether the node speaks TLS: nothing is sent over it, so its certificate need not be trusted.
    const socket = tlsConnect({ host, port, rejectUnauthorized: false });
    socket.on("secureConnect", () => done(true));
    // A handshake refused with a TLS alert (no client certificate …) is TLS too; a reset, a
    // refusal, or bytes that are not TLS at all (a plaintext node's CQL error: OpenSSL's "wrong
    // version number") are not.
    socket.on("error", (e: Error & { code?: string }) => {
      const text = `${e.message} ${e.code ?? ""}`;
      done(!/wrong.?version|unknown.?protocol|packet.?length|record.?layer|http.?request/i.test(text) && /alert|certificate|handshake/i.test(text));
    });
    const timer = setTimeout(() => done(false), ms);
  });
}

/**
 * What a node says to a TLS handshake with `ssl` when the client then writes nothing: an
 * Error with its alert, or "closed" right after the handshake (a CQL node does not close a new
 * idle connection: it refused the client's certificate), or undefined when it keeps the
 * connection open for `ms`.
 */
function tlsVerdict(host: string, port: number, ssl: TlsSetup["ssl"], ms: number): Promise<Error | "closed" | undefined> {
  return new Promise((resolve) => {
    let settled = false, handshaken = false;
    const done = (v: Error | "closed" | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(v);
    };
    // The node's own certificate was checked by the connect that failed; here only its verdict on ours matters.
    const socket = tlsConnect({ ...(ssl as object), host, port, rejectUnauthorized: false });
    socket.on("secureConnect", () => (handshaken = true));
    socket.on("data", () => done(undefined));
    socket.on("error", (e: Error) => done(handshaken || /alert/i.test(e.message) ? e : undefined));
    socket.on("close", () => done(handshaken ? "closed" : undefined));
    const timer = setTimeout(() => done(undefined), ms);
  });
}

/**
 * The contact points that answer a CQL OPTIONS request within `ms`, in the order they answered;
 * all of them, in the order given, when none does (the driver then says why). The driver opens
 * its control connection on the contact points in a random order, and one that accepts TCP but
 * never answers (a frozen node) held it for the read timeout, 30 s, one time in three on a
 * three-node cluster. The nodes left out are found again through system.peers.
 */
async function answeringFirst(hosts: string[], port: number, ms: number): Promise<string[]> {
  const answered: string[] = [];
  await new Promise<void>((resolve) => {
    let pending = hosts.length;
    const timer = setTimeout(resolve, ms);
    for (const host of hosts) {
      const socket = tcpConnect({ host, port });
      let ended = false;
      const end = (ok: boolean) => {
        if (ended) return;
        ended = true;
        socket.destroy();
        if (ok && !answered.includes(host)) answered.push(host);
        // The first answer is enough to go on with; a short grace lets the others join the list.
        if (ok && answered.length === 1) setTimeout(resolve, 50);
        if (--pending === 0) (clearTimeout(timer), resolve());
      };
      socket.setTimeout(ms, () => end(false));
      socket.once("error", () => end(false));
      // OPTIONS, protocol v4, stream 0: a CQL server answers with a response frame (the version
      // byte's high bit set: 0x84 SUPPORTED, or an error frame from one that wants another version).
      socket.once("connect", () => socket.write(Uint8Array.of(0x04, 0, 0, 0, 0x05, 0, 0, 0, 0)));
      socket.once("data", (b: Uint8Array) => end((b[0] & 0x80) !== 0));
    }
  });
  return answered.length ? answered : hosts;
}
