/**
 * A static file server for the example page: the checkout's files on 127.0.0.1 only, with what
 * the page needs of a server (runs with `bun`, `deno run -A` or `node`):
 *   - CORS (Access-Control-Allow-Origin: *, Range allowed), so shards served here can be read
 *     from a page of another origin, as from a bucket;
 *   - cross-origin isolation (COOP same-origin, COEP require-corp), without which a page has no
 *     SharedArrayBuffer, which the Loader's read workers hand their packets over in;
 *   - Range requests (one range), which a WebDataset source sends to resume a shard.
 *
 *   bun examples/browser/serve.ts [--port 8000] [--root DIR]
 *
 * Nothing outside the root is served (no `..`, no symbolic link out of it).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createReadStream, realpathSync, statSync } from "node:fs";
import { extname, join, resolve, sep } from "node:path";
import process from "node:process";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json", ".map": "application/json", ".css": "text/css", ".wasm": "application/wasm",
  ".tar": "application/x-tar", ".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg",
};

export interface StaticServer {
  /** http://127.0.0.1:PORT/ */
  readonly url: string;
  /** Requests answered, by path (for tests: which shards were read). */
  readonly requests: { path: string; range?: string; status: number }[];
  close(): Promise<void>;
}

/**
 * Serves `root` on 127.0.0.1 (port 0: any free one); `mounts` serves other folders under URL
 * prefixes (`{ "/shards/": DIR }`: /shards/x is DIR/x). `cors: false` leaves out the CORS
 * headers (a bucket not set up for pages, for tests).
 */
export function serveStatic(root: string, port = 0, mounts: Record<string, string> = {}, o: { cors?: boolean } = {}): Promise<StaticServer> {
  const cors = o.cors ?? true;
  const bases = [...Object.entries(mounts).map(([prefix, dir]) => [prefix, realpathSync(resolve(dir))]), ["/", realpathSync(resolve(root))]];
  const requests: StaticServer["requests"] = [];
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    const [prefix, base] = bases.find(([p]) => path.startsWith(p))!;
    const status = answer(base, `/${path.slice(prefix.length)}`, req, res, cors);
    requests.push({ path: decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname), ...(req.headers.range ? { range: req.headers.range } : {}), status });
  });
  return new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(port, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      ok({
        url: `http://127.0.0.1:${port}/`,
        requests,
        close: () => new Promise<void>((done) => {
          server.closeAllConnections?.();
          server.close(() => done());
        }),
      });
    });
  });
}

function answer(base: string, asked: string, req: IncomingMessage, res: ServerResponse, cors: boolean): number {
  if (cors) {
    res.setHeader("access-control-allow-origin", "*");
    res.setHeader("access-control-allow-headers", "range, authorization");
    res.setHeader("access-control-expose-headers", "content-length, content-range, accept-ranges");
  }
  res.setHeader("cross-origin-opener-policy", "same-origin");
  res.setHeader("cross-origin-embedder-policy", "require-corp");
  res.setHeader("cross-origin-resource-policy", "cross-origin");
  res.setHeader("cache-control", "no-store");
  const end = (status: number, text = "") => (res.writeHead(status, { "content-type": "text/plain" }).end(text), status);
  if (req.method === "OPTIONS") return end(204);
  if (req.method !== "GET" && req.method !== "HEAD") return end(405, "GET only\n");
  const path = asked.endsWith("/") ? `${asked}index.html` : asked;
  let file: string;
  try {
    file = realpathSync(join(base, path));
  } catch {
    return end(404, `no ${path}\n`);
  }
  if (file !== base && !file.startsWith(base + sep)) return end(403, "outside the served folder\n");
  const st = statSync(file);
  if (!st.isFile()) return end(404, `no ${path}\n`);
  const type = TYPES[extname(file)] ?? "application/octet-stream";
  const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
  if (req.headers.range && (!m || Number(m[1]) >= st.size)) {
    res.writeHead(416, { "content-range": `bytes */${st.size}` }).end();
    return 416;
  }
  const start = m ? Number(m[1]) : 0;
  const last = m && m[2] ? Math.min(Number(m[2]), st.size - 1) : st.size - 1;
  const status = m ? 206 : 200;
  res.writeHead(status, {
    "content-type": type, "content-length": String(last - start + 1), "accept-ranges": "bytes",
    ...(m ? { "content-range": `bytes ${start}-${last}/${st.size}` } : {}),
  });
  if (req.method === "HEAD" || st.size === 0) return res.end(), status;
  createReadStream(file, { start, end: last }).pipe(res);
  return status;
}

if (import.meta.main ?? (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname))) {
  const args = (globalThis as { Deno?: { args: string[] } }).Deno?.args ?? process.argv.slice(2);
  const opt = (name: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const root = opt("root") ?? new URL("../..", import.meta.url).pathname;
  const server = await serveStatic(root, Number(opt("port") ?? 8000));
  console.log(`serving ${root} (CORS, cross-origin isolated) at ${server.url}\nthe example page: ${server.url}examples/browser/`);
}
