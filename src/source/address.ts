/**
 * Store addresses, as users write them (the README's "Any address"):
 *   sqlite:PATH
 *   cassandra://[user:pass@]host[,host…][:port]/KEYSPACE[?dc=…&tls=1&ca=FILE&cert=FILE&key=FILE&connections=N&requests=N&consistency=LEVEL]
 *                                ca, cert and key are PEM files (the CA that signed the nodes'
 *                                certificates; the client's certificate and key for mutual
 *                                TLS), read by source/cassandra/cassandra_client.ts; each implies tls=1
 *   http(s)://[user:pass@]HOST/PREFIX[?maxsample=64MiB&redirects=3&ca=PATH&…]   objects at
 *                                PREFIX/ID; the options are read by source/http/http.ts (parseHttpUrl)
 *   s3://BUCKET/PREFIX[?endpoint=URL&region=R&style=path|virtual&profile=P&anonymous=1&…]
 *                                the same layout in a bucket, signed with SigV4; the options
 *                                (and the HTTP ones) are read by source/http/s3.ts (parseS3Url)
 *   file:DIR
 *   wds:INDEX                    WebDataset shards listed by a wids shard index (`cassette export
 *                                --format webdataset` writes PREFIX.index.json): INDEX is a file
 *                                path, an http(s):// URL or an s3:// address (with their options),
 *                                read by source/webdataset/webdataset_source.ts; read only
 *
 * Each kind parses its own in the kind table (src/source/kinds.ts: `locate`, `parseStoreAddress`;
 * Cassandra's in source/cassandra/address.ts); here are the parsed types and the named error.
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

/** Cassandra's consistency levels as an address names them (cassandra-driver's types.consistencies, in snake case). */
export const CONSISTENCIES = ["any", "one", "two", "three", "quorum", "all", "local_quorum", "each_quorum", "local_one"] as const;
export type Consistency = typeof CONSISTENCIES[number];

/** A `cassandra://` address, parsed (src/source/cassandra/address.ts). */
export type CassandraAddress = Extract<StoreAddress, { kind: "cassandra" }>;

/** The named error of an address that cannot be used, saying why (the password hidden). */
export function storeAddressError(address: string, why: string): CassetteError {
  return new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address '${redact(address)}' as ${why}`);
}

/** The address with any password hidden, for messages and logs. */
export function redact(address: string): string {
  return address.replace(/^(cassandra:\/\/[^:/@]*:)[^@]*@/, "$1***@");
}
