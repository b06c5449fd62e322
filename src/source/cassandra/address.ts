/**
 * `cassandra://[user:pass@]host[,host…][:port]/KEYSPACE[?…]` (the options: src/source/address.ts),
 * parsed for the store kind table (src/source/kinds.ts). `bad` throws the address's named error.
 */
import { CassetteError } from "../../errors.ts";
import { type CassandraAddress, CONSISTENCIES, type Consistency, redact, storeAddressError } from "../address.ts";

const KEYSPACE = /^[A-Za-z][A-Za-z0-9_]{0,47}$/;

/** Parses a `cassandra://` address; `bad` names what is wrong with it. */
export function parseCassandraAddress(address: string, bad: (why: string) => never = (why) => {
  throw storeAddressError(address, why);
}): CassandraAddress {
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
  const out: CassandraAddress = {
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

/**
 * `address` as Cassandra's: `parsed` where the kind table parsed it already (src/source/kinds.ts),
 * else parsed here (a caller that opens Cassandra directly, as the tests and benches do).
 */
export function cassandraAddress(address: string, parsed?: CassandraAddress): CassandraAddress {
  if (parsed) return parsed;
  if (!address.startsWith("cassandra://")) {
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]*(?=:)/.exec(address)?.[0] ?? "other";
    throw new CassetteError("ERR_STORE_ADDRESS", `Cannot open '${redact(address)}' as Cassandra: it is a ${scheme} address`);
  }
  return parseCassandraAddress(address);
}
