/**
 * A live dashboard of a read or a training run, served from the runtime's own HTTP server
 * (node:http, the same on Bun, Deno and Node) on loopback unless told otherwise:
 *
 *   GET /            the page: self-contained HTML, inline script, charts drawn as inline SVG
 *   GET /events      server-sent events: `history` (the curves so far) and the latest `frame`
 *                    at once, then one `frame` per update()
 *   GET /metrics     the latest figures in Prometheus' text format (src/observe/prometheus.ts)
 *   GET /frame.json  the latest frame
 *
 * The caller pushes frames (`update()`, a few per second; `frameFromStats` fills one from
 * `loader.stats()`); a DashboardRun (dashboard_run.ts) derives what needs two frames (rates now,
 * per-connection throughput), folds batch times into a fixed-bucket histogram and keeps a
 * bounded history (NOTE [ Dashboard history ]), so memory stays flat however long the run. The
 * figures are drawn here, by dashboard_figures.ts, and pushed with each frame: the page only
 * puts them in place, as the component a page mounts (dashboard_mount.ts) does with the same
 * function's output.
 *
 * @example
 * ```ts
 * import { startDashboard } from "./dashboard.ts";
 * const dash = await startDashboard({ port: 0, title: "example" });
 * dash.update({ seconds: 1, step: 10, samples: 1280, imagesPerSec: 1280, waitShare: 0.1 });
 * const text = await (await fetch(`${dash.url}metrics`)).text();
 * if (!text.includes("cassette_samples_total 1280")) throw new Error(text);
 * await dash.close();
 * ```
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { CassetteError } from "../errors.ts";
import { dashboardPage } from "./dashboard_page.ts";
import { PROMETHEUS_CONTENT_TYPE, PrometheusText } from "./prometheus.ts";
import { dashboardFigures } from "./dashboard_figures.ts";
import { BATCH_BUCKETS_MS, type DashboardFrame, DashboardRun, type HistoryPoint, type ServedFrame } from "./dashboard_run.ts";

// The frames and their derivation live in dashboard_run.ts (a page's component keeps them too).
export { BATCH_BUCKETS_MS, frameFromStats, HISTORY_CAP } from "./dashboard_run.ts";
export type { DashboardFrame, HistoryPoint, ServedFrame } from "./dashboard_run.ts";

/** How `startDashboard` serves the page: port, host and title. */
export interface DashboardOptions {
  /** TCP port; 0 (the default) takes any free one (read it from `port` or `url`). */
  port?: number;
  /** Address to listen on (default 127.0.0.1: this machine only). Another host is the caller's choice. */
  host?: string;
  /** The page's title (default "cassette"). */
  title?: string;
}

/** A running dashboard server (`startDashboard`): give it frames with `update`, stop it with `close`. */
export interface Dashboard {
  /** `http://HOST:PORT/`, the page. */
  readonly url: string;
  /** The TCP port it listens on. */
  readonly port: number;
  /** The latest figures: served at once and pushed to every open page. */
  update(frame: DashboardFrame): void;
  /** The latest frame as served (undefined before the first update). */
  latest(): ServedFrame | undefined;
  /** The history kept now (at most HISTORY_CAP points). */
  history(): readonly HistoryPoint[];
  /** Ends every open event stream (after the last frame) and stops the server. */
  close(): Promise<void>;
}

/**
 * Serves the dashboard; resolves once it listens. A port in use (or any other failure to
 * listen) is a CassetteError that names the address.
 */
export async function startDashboard(options: DashboardOptions = {}): Promise<Dashboard> {
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot serve the dashboard as the port must be an integer 0…65535: current value is ${port}`);
  }
  const state = new DashboardState(options.title ?? "cassette", host);
  const server = createServer((req, res) => state.handle(req, res));
  // Sockets are tracked so that close() ends keep-alive connections too: an idle browser tab
  // must not keep the process alive.
  const sockets = new Set<Socket>();
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException) => {
      const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
      reject(new CassetteError("ERR_INVALID_OPTION", e.code === "EADDRINUSE"
        ? `Cannot serve the dashboard on ${where} as port ${port} is in use: choose another port, or 0 for any free one`
        : `Cannot serve the dashboard on ${where}: ${e.message}`, { cause: e }));
    };
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve();
    });
  });
  const bound = (server.address() as { port: number }).port;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${bound}/`;
  let closed: Promise<void> | undefined;
  return {
    url,
    port: bound,
    update: (frame) => state.update(frame),
    latest: () => state.run.latest,
    history: () => state.run.points,
    close: () => (closed ??= closeServer(server, state, sockets)),
  };
}

async function closeServer(server: Server, state: DashboardState, sockets: Set<Socket>): Promise<void> {
  // The streams end after what was written (the last frame reaches the page), then the
  // listener stops and idle keep-alive sockets go; whatever is still open after a grace period
  // is destroyed, so close() never waits on a client.
  state.endStreams();
  const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections?.();
  const grace = new Promise<void>((resolve) => setTimeout(resolve, 200));
  await Promise.race([stopped, grace]);
  for (const s of sockets) s.destroy();
  server.closeAllConnections?.();
  // Deno's node:http does not always call close()'s callback once the sockets are gone; the
  // listener is closed by then, so waiting longer would only hold the caller.
  await Promise.race([stopped, new Promise<void>((resolve) => setTimeout(resolve, 50))]);
}

/** The run's figures (a DashboardRun), the page and the open event streams of one dashboard. */
class DashboardState {
  readonly run = new DashboardRun();
  readonly #title: string;
  readonly #loopbackOnly: boolean;
  readonly #streams = new Set<Stream>();
  #page: string | undefined;

  constructor(title: string, host: string) {
    this.#title = title;
    this.#loopbackOnly = LOOPBACK.test(host);
  }

  update(frame: DashboardFrame): void {
    const { served, point } = this.run.update(frame);
    // The page draws what the server renders (dashboard_figures.ts): only while a page listens.
    if (this.#streams.size === 0) return;
    const message = event("frame", { frame: served, point, figures: dashboardFigures(served, this.run.points) });
    for (const s of this.#streams) s.send(message);
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    // A page on another site could reach a loopback server through a DNS name that resolves to
    // 127.0.0.1 (DNS rebinding): on loopback only loopback names are answered.
    if (this.#loopbackOnly && !LOOPBACK.test(hostName(req.headers.host ?? ""))) {
      return void send(res, 403, "text/plain; charset=utf-8", "the dashboard answers loopback names only\n");
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      return void send(res, 405, "text/plain; charset=utf-8", "GET or HEAD only\n");
    }
    const path = (req.url ?? "/").split("?")[0];
    switch (path) {
      case "/":
        this.#page ??= dashboardPage(this.#title);
        return void send(res, 200, "text/html; charset=utf-8", this.#page);
      case "/events":
        return this.#stream(req, res);
      case "/metrics":
        return void send(res, 200, PROMETHEUS_CONTENT_TYPE, metricsText(this.run.latest));
      case "/frame.json":
        return void send(res, 200, "application/json", JSON.stringify(this.run.latest ?? null));
      default:
        return void send(res, 404, "text/plain; charset=utf-8", `no ${path} here: / /events /metrics /frame.json\n`);
    }
  }

  #stream(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", "x-accel-buffering": "no" });
    if (req.method === "HEAD") return void res.end();
    const stream = new Stream(res);
    this.#streams.add(stream);
    res.on("close", () => this.#streams.delete(stream));
    // A page reconnecting after its server is gone retries every second, not every 3 s.
    const latest = this.run.latest;
    const frame = latest ? event("frame", { frame: latest, point: null, figures: dashboardFigures(latest, this.run.points) }) : "";
    stream.send(`retry: 1000\n\n${event("history", this.run.points)}${frame}`);
  }

  endStreams(): void {
    for (const s of this.#streams) s.end();
    this.#streams.clear();
  }
}

/**
 * One open event stream. A slow reader does not make the server buffer without bound: while
 * its socket is full, frames are not queued, only the latest is sent once it drains.
 */
class Stream {
  readonly #res: ServerResponse;
  #blocked = false;
  #pending: string | undefined;

  constructor(res: ServerResponse) {
    this.#res = res;
  }

  send(message: string): void {
    if (this.#blocked) {
      // Keep a history (it resets the curves) with the latest frame; drop older frames.
      this.#pending = message.startsWith("event: frame") ? message : (this.#pending ?? "") + message;
      return;
    }
    if (!this.#res.write(message)) {
      this.#blocked = true;
      this.#res.once("drain", () => {
        this.#blocked = false;
        const p = this.#pending;
        this.#pending = undefined;
        if (p) this.send(p);
      });
    }
  }

  end(): void {
    this.#res.end(this.#pending ?? "");
  }
}

function event(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
  res.end(body);
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|::1|\[::1\])$/i;

/** The name in a Host header, without its port. */
function hostName(header: string): string {
  if (header.startsWith("[")) return header.slice(0, header.indexOf("]") + 1);
  return header.split(":")[0];
}

/**
 * The latest frame in Prometheus' text format: totals since the run began are counters
 * (`_total`), levels are gauges, times in seconds (Prometheus' base unit). Figures a frame does
 * not have are left out.
 */
export function metricsText(f: ServedFrame | undefined): string {
  const p = new PrometheusText();
  if (!f) return p.toString();
  const split = (v: { train?: number; test?: number } | undefined): [Record<string, string>, number][] =>
    (["train", "test"] as const).filter((k) => v?.[k] !== undefined).map((k) => [{ split: k }, v![k]!]);
  const conns = Object.entries(f.connections ?? {});
  p.gauge("cassette_run_seconds", "Seconds since the run began.", f.seconds)
    .gauge("cassette_epoch", "The epoch being read or trained.", f.epoch)
    .counter("cassette_steps_total", "Batches handed over (training steps).", f.step)
    .counter("cassette_samples_total", "Samples handed over.", f.samples)
    .counter("cassette_bytes_total", "Bytes of the samples handed over.", f.bytes)
    .gauge("cassette_images_per_second", "Samples per second over the run.", f.imagesPerSec)
    .gauge("cassette_images_per_second_now", "Samples per second over about the last second.", f.imagesPerSecNow)
    .gauge("cassette_wait_share", "Share of the batch time the consumer waited for the loader (0-1).", f.waitShare)
    .gauge("cassette_loss", "The latest loss, by split.", split(f.loss))
    .gauge("cassette_accuracy", "The latest accuracy (0-1), by split.", split(f.accuracy))
    .histogram("cassette_batch_seconds", "Time between consecutive batches handed over.", BATCH_BUCKETS_MS.map((ms) => ms / 1000), f.batchHistogram.counts, f.batchHistogram.sumMs / 1000)
    .counter("cassette_connection_bytes_total", "Bytes delivered per connection (or node).", conns.map(([c, n]) => [{ connection: c }, n.bytes]))
    .counter("cassette_connection_samples_total", "Samples delivered per connection (or node).", conns.map(([c, n]) => [{ connection: c }, n.samples]))
    .gauge("cassette_prefetch_batches", "The prefetch window's depth in batches.", f.prefetch)
    .gauge("cassette_max_outstanding_samples", "Most samples outstanding at once (requested, not handed over).", f.maxOutstanding)
    .counter("cassette_retries_total", "Requests retried after an error.", f.retries)
    .counter("cassette_hedged_total", "Slow requests asked a second time.", f.hedged)
    .counter("cassette_hedge_wins_total", "Hedged requests whose second answer came first.", f.hedgeWins)
    .counter("cassette_reasked_total", "Samples asked again at an epoch's tail.", f.reasked)
    .counter("cassette_skipped_total", "Samples given up on.", f.skipped)
    .counter("cassette_duplicates_total", "Samples delivered twice and dropped.", f.duplicates)
    .gauge("cassette_workers", "Workers decoding or reading now.", f.workers)
    .counter("cassette_slow_lane_total", "Decode jobs that ran past the deadline.", f.slowLane)
    .counter("cassette_stolen_total", "Decode jobs taken back from a slow worker.", f.stolen)
    .gauge("cassette_done", "1 once the run has ended.", f.done === undefined ? undefined : Number(f.done));
  return p.toString();
}
