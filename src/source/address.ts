/**
 * Store addresses, as users write them (the README's "Any address"):
 *   sqlite:PATH
 *   cassandra://[user:pass@]host[,host…][:port]/KEYSPACE[?dc=…&tls=1&ca=FILE&cert=FILE&key=FILE&connections=N&requests=N&consistency=LEVEL]
 *                                ca, cert and key are PEM files (the CA that signed the nodes'
 *                                certificates; the client's certificate and key for mutual
 *                                TLS), read by source/cassandra_client.ts; each implies tls=1
 *   http(s)://[user:pass@]HOST/PREFIX[?maxsample=64MiB&redirects=3&ca=PATH&…]   objects at
 *                                PREFIX/ID; the options are read by source/http.ts (parseHttpUrl)
 *   s3://BUCKET/PREFIX[?endpoint=URL&region=R&style=path|virtual&profile=P&anonymous=1&…]
 *                                the same layout in a bucket, signed with SigV4; the options
 *                                (and the HTTP ones) are read by source/s3.ts (parseS3Url)
 *   file:DIR
 *   wds:INDEX                    WebDataset shards listed by a wids shard index (`cassette export
 *                                --format webdataset` writes PREFIX.index.json): INDEX is a file
 *                                path, an http(s):// URL or an s3:// address (with their options),
 *                                read by source/webdataset_source.ts; read only
 */
import { CassetteError } from "../errors.ts";

export type StoreAddress =
  | { kind: "sqlite"; path: string }
  | {
    kind: "cassandra";
    hosts: string[];
    port: number;
    keyspace: string;
    username?: string;
    password?: string;
    /** Local datacenter for the driver's load balancing; Cassandra's default name otherwise. */
    dc: string;
    tls: boolean;
    /** PEM file of the CA that signed the nodes' certificates (`ca=`); the system's CAs otherwise. */
    ca?: string;
    /** PEM files of the client's certificate and key, for nodes that require one (`cert=`, `key=`: both or neither). */
    cert?: string;
    key?: string;
    /** Connections per local host (driver pooling.coreConnectionsPerHost), if set. */
    connections?: number;
    /** Requests in flight per connection (driver pooling.maxRequestsPerConnection), if set. */
    requests?: number;
    /** Consistency level of reads and writes (default local_one: one replica in the local datacenter). */
    consistency: Consistency;
  }
  | { kind: "http"; url: string }
  | { kind: "s3"; url: string }
  | { kind: "file"; dir: string }
  /** `wds:INDEX`: where the shard index is, as given (a path, an http(s):// URL, an s3:// address). */
  | { kind: "wds"; index: string };

const KEYSPACE = /^[A-Za-z][A-Za-z0-9_]{0,47}$/;

/** Cassandra's consistency levels as an address names them (cassandra-driver's types.consistencies, in snake case). */
export const CONSISTENCIES = ["any", "one", "two", "three", "quorum", "all", "local_quorum", "each_quorum", "local_one"] as const;
export type Consistency = typeof CONSISTENCIES[number];

/** Parses a store address; errors name the address and what is wrong with it. */
export function parseStoreAddress(address: string): StoreAddress {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address '${redact(address)}' as ${why}`);
  };
  if (address.startsWith("sqlite:")) {
    const path = address.slice("sqlite:".length);
    if (!path) bad("it names no file (sqlite:PATH)");
    return { kind: "sqlite", path };
  }
  if (address.startsWith("file:")) {
    const dir = address.slice("file:".length).replace(/^\/\/(?=\/)/, "");
    if (!dir) bad("it names no folder (file:DIR)");
    return { kind: "file", dir };
  }
  if (address.startsWith("wds:")) {
    const index = address.slice("wds:".length).replace(/^file:(\/\/(?=\/))?/, "");
    if (!index) bad("it names no shard index (wds:PATH, wds:http(s)://…, wds:s3://…)");
    return { kind: "wds", index };
  }
  if (/^https?:\/\//.test(address)) return { kind: "http", url: address.replace(/\/+$/, "") };
  if (address.startsWith("s3://")) return { kind: "s3", url: address };
  if (address.startsWith("cassandra://")) {
    // URL() does not accept several hosts, so split by hand: auth@hosts:port/keyspace?query
    const rest = address.slice("cassandra://".length);
    const [main, query = ""] = rest.split("?", 2);
    const slash = main.indexOf("/");
    if (slash < 0) bad("it has no keyspace (cassandra://HOST/KEYSPACE)");
    let authority = main.slice(0, slash);
    const keyspace = main.slice(slash + 1);
    if (!KEYSPACE.test(keyspace)) bad(`the keyspace '${keyspace}' is not a valid Cassandra name (letter, then letters, digits, _)`);
    let username: string | undefined, password: string | undefined;
    const at = authority.lastIndexOf("@");
    if (at >= 0) {
      [username, password] = authority.slice(0, at).split(":").map(decodeURIComponent);
      authority = authority.slice(at + 1);
    }
    let port = 9042;
    const portMatch = /:(\d+)$/.exec(authority);
    if (portMatch) {
      port = Number(portMatch[1]);
      authority = authority.slice(0, portMatch.index);
      if (!(port > 0 && port < 65536)) bad(`the port ${port} is out of range`);
    }
    const hosts = authority.split(",").filter(Boolean);
    if (hosts.length === 0) bad("it names no host");
    const params = new URLSearchParams(query);
    const known = ["dc", "tls", "ca", "cert", "key", "connections", "requests", "consistency"];
    for (const k of params.keys()) if (!known.includes(k)) bad(`'${k}' is not an option (${known.join(", ")})`);
    const count = (k: string) => {
      const v = params.get(k);
      if (v === null) return undefined;
      if (!/^\d+$/.test(v) || Number(v) < 1) bad(`'${k}' must be a positive integer: current value is ${v}`);
      return Number(v);
    };
    const consistency = (params.get("consistency") ?? "local_one").toLowerCase() as Consistency;
    if (!CONSISTENCIES.includes(consistency)) bad(`'consistency' must be one of ${CONSISTENCIES.join(", ")}: current value is ${params.get("consistency")}`);
    // tls=1 (or true) turns TLS on; a CA, certificate or key file implies it, and tls=0 with one
    // of them is a contradiction, not a silent plaintext connection.
    const tlsParam = params.get("tls");
    if (tlsParam !== null && !["0", "1", "true", "false"].includes(tlsParam)) bad(`'tls' must be 1 or 0: current value is ${tlsParam}`);
    const file = (k: "ca" | "cert" | "key") => {
      const v = params.get(k);
      if (v === null) return undefined;
      if (!v) bad(`'${k}' names no file (${k}=FILE)`);
      return v;
    };
    const ca = file("ca"), cert = file("cert"), key = file("key");
    if ((cert === undefined) !== (key === undefined)) bad(`a client certificate needs both 'cert' and 'key': only '${cert === undefined ? "key" : "cert"}' is given`);
    const files = ca !== undefined || cert !== undefined;
    if (files && (tlsParam === "0" || tlsParam === "false")) bad(`'${ca !== undefined ? "ca" : "cert"}' is a TLS setting but 'tls' is ${tlsParam}`);
    const out: StoreAddress = {
      kind: "cassandra", hosts, port, keyspace, username, password, dc: params.get("dc") ?? "datacenter1",
      tls: tlsParam === "1" || tlsParam === "true" || files, consistency,
    };
    if (ca !== undefined) out.ca = ca;
    if (cert !== undefined) Object.assign(out, { cert, key });
    const connections = count("connections"), requests = count("requests");
    if (connections !== undefined) out.connections = connections;
    if (requests !== undefined) out.requests = requests;
    return out;
  }
  return bad("its scheme is none of sqlite:, cassandra://, http(s)://, s3://, file:, wds:");
}

/** The address with any password hidden, for messages and logs. */
export function redact(address: string): string {
  return address.replace(/^(cassandra:\/\/[^:/@]*:)[^@]*@/, "$1***@");
}
