/**
 * Routing cassandra-driver (4.10) through latency proxies, so that every connection it opens
 * pays the proxy's delay. What the driver does (lib/control-connection.js, and measured, see
 * README.md beside this file):
 *
 * - The host it reached as a contact point keeps the contact point's address: `_setLocalInfo`
 *   names the control connection's host by the endpoint it dialled, not by system.local's
 *   rpc_address. One node behind one proxy needs nothing more: contact point = the proxy.
 * - Every other node comes from system.peers as `rpc_address` + the client's
 *   `protocolOptions.port`, passed through `policies.addressResolution` (also for STATUS_CHANGE
 *   events). Without a translator the driver dials those nodes directly, around the proxies.
 *
 * So: one proxy per node, the proxies as contact points, and a translator that maps each
 * node's rpc_address to its proxy.
 *
 * ```ts
 * const route = await startCassandraProxies({ nodes: ["127.0.0.1:9042", "127.0.0.2:9042"], profile: uniform(75) });
 * const client = new cassandra.Client({ ...route.driverOptions, localDataCenter: "datacenter1" });
 * ```
 */
import cassandra from "cassandra-driver";
import { CassetteError } from "../../src/errors.ts";
import { type Endpoint, type Profile, type ProfileFn, type Proxy, type ProxyStats, startProxy } from "./proxy.ts";

type TranslateCallback = (endpoint: string) => void;
type TranslatorClass = new () => { translate(address: string, port: number, callback: TranslateCallback): void };
// index.d.ts declares AddressTranslator as an interface, but the driver checks `instanceof` the
// runtime class (client-options.js validatePoliciesOptions), so the translator must extend it.
const AddressTranslator = (cassandra.policies.addressResolution as unknown as { AddressTranslator: TranslatorClass }).AddressTranslator;

/** An AddressTranslator that sends each node (by rpc_address) to its proxy. */
export class ProxyAddressTranslator extends AddressTranslator {
  readonly routes: ReadonlyMap<string, Endpoint>;
  /** Addresses the driver asked about that have no proxy: it connects to those directly. */
  readonly unmapped = new Set<string>();

  /** `routes`: node address (rpc_address, without port) → the proxy in front of it. */
  constructor(routes: Map<string, Endpoint> | Record<string, Endpoint>) {
    super();
    this.routes = routes instanceof Map ? new Map(routes) : new Map(Object.entries(routes));
  }

  override translate(address: string, port: number, callback: TranslateCallback): void {
    const to = this.routes.get(address);
    if (to) return callback(`${to.host}:${to.port}`);
    if (!this.unmapped.has(address)) {
      this.unmapped.add(address);
      console.warn(`proxy: no proxy for Cassandra node ${address}: the driver connects to ${address}:${port} directly`);
    }
    callback(`${address}:${port}`); // the driver's own default
  }
}

/** `routes` as a translator the driver accepts in `policies.addressResolution`. */
export function proxyAddressTranslator(routes: Map<string, Endpoint> | Record<string, Endpoint>): ProxyAddressTranslator {
  return new ProxyAddressTranslator(routes);
}

export interface CassandraProxiesOptions {
  /** Every node of the cluster as `host:port` or an Endpoint; host must be its rpc_address. */
  nodes: (string | Endpoint)[];
  /** Profile by connection index; each proxy counts its own connections. */
  profile: ProfileFn | Profile;
  /** Where the proxies listen (default 127.0.0.1, each on a free port). */
  listenHost?: string;
  queueBytes?: number;
  handshake?: boolean;
}

export interface CassandraProxies {
  /** One proxy per node, in the order of `nodes`. */
  proxies: Proxy[];
  translator: ProxyAddressTranslator;
  /** `host:port` of each proxy: the driver's contact points. */
  contactPoints: string[];
  /** Spread into `new cassandra.Client({ ...driverOptions, localDataCenter })`. */
  driverOptions: { contactPoints: string[]; policies: { addressResolution: ProxyAddressTranslator } };
  /** Each proxy's stats, by node address. */
  stats(): Record<string, ProxyStats>;
  close(): Promise<void>;
}

/** Starts one proxy per node and the translator that routes the driver through them. */
export async function startCassandraProxies(o: CassandraProxiesOptions): Promise<CassandraProxies> {
  if (!Array.isArray(o.nodes) || o.nodes.length === 0) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot start the Cassandra proxies as 'nodes' must list at least one node: current value is ${JSON.stringify(o.nodes)}`);
  }
  const nodes = o.nodes.map(parseNode);
  const seen = new Set<string>();
  for (const n of nodes) {
    // system.peers gives rpc_address without the port: two nodes on one address are ambiguous.
    if (seen.has(n.host)) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot start the Cassandra proxies as two nodes share the address ${n.host}: the driver tells nodes apart by rpc_address only`);
    }
    seen.add(n.host);
  }
  const proxies: Proxy[] = [];
  try {
    for (const target of nodes) {
      proxies.push(await startProxy({ target, listen: { host: o.listenHost ?? "127.0.0.1", port: 0 }, profile: o.profile, queueBytes: o.queueBytes, handshake: o.handshake }));
    }
  } catch (e) {
    await Promise.all(proxies.map((p) => p.close()));
    throw e;
  }
  const routes = new Map(nodes.map((n, i) => [n.host, { host: proxies[i].host, port: proxies[i].port }]));
  const translator = new ProxyAddressTranslator(routes);
  const contactPoints = proxies.map((p) => `${p.host}:${p.port}`);
  return {
    proxies,
    translator,
    contactPoints,
    driverOptions: { contactPoints, policies: { addressResolution: translator } },
    stats: () => Object.fromEntries(nodes.map((n, i) => [`${n.host}:${n.port}`, proxies[i].stats()])),
    close: async () => void (await Promise.all(proxies.map((p) => p.close()))),
  };
}

function parseNode(n: string | Endpoint): Endpoint {
  if (typeof n === "object" && n && typeof n.host === "string" && Number.isInteger(n.port)) return n;
  const m = typeof n === "string" ? /^([^:]+)(?::(\d+))?$/.exec(n) : null;
  if (!m) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot start the Cassandra proxies as a node must be 'host:port' or { host, port }: current value is ${JSON.stringify(n)}`);
  }
  return { host: m[1], port: m[2] ? Number(m[2]) : 9042 };
}
