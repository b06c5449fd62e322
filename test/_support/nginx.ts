/**
 * A real nginx (Debian's /usr/sbin/nginx) for tests, serving a folder: one instance per call,
 * on a free 127.0.0.1 port, with its own config, pid, logs and temp paths in a temp folder,
 * so it runs unprivileged and beside anything else. It is a child process (`daemon off`,
 * `master_process off`: one process, which reads files as the test's user and dies whole on
 * SIGTERM). `stop()` and `start()` take it down and bring it back on the same port, for
 * tests of a server dying mid-epoch; `close()` stops it and removes its folder.
 *
 *   const web = await startNginx({ root: exportDir });       // objects at web.url/<name>
 *   afterAll(() => web.close());
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../tools/proxy/process.ts";

export const NGINX = "/usr/sbin/nginx";
/** A skip reason when nginx is not installed (apt-get install nginx-light or nginx). */
export const NO_NGINX: string | false = existsSync(NGINX) ? false : `${NGINX} is not installed`;

export interface NginxOptions {
  /** The folder served under /PREFIX/. */
  root: string;
  /** URL path prefix, without slashes (default "data"). */
  prefix?: string;
  /**
   * More directives for the server block, e.g. a location that fails on purpose:
   * `location = /data/ID { if (-f /tmp/flag) { return 503; } alias /srv/ID; }`.
   */
  extra?: string;
  /** Port to listen on (default: a free one). */
  port?: number;
}

export interface Nginx {
  /** `http://127.0.0.1:PORT/PREFIX`: objects at `${url}/<name>`. */
  readonly url: string;
  readonly port: number;
  /** nginx's own folder (config, logs, temp paths). */
  readonly dir: string;
  /** Whether the process is running. */
  running(): boolean;
  /** Stops nginx (fast shutdown: open connections are closed). */
  stop(): Promise<void>;
  /** Starts it again on the same port with the same config. */
  start(): Promise<void>;
  /** The error log so far. */
  errorLog(): string;
  /** Stops it and removes its folder. */
  close(): Promise<void>;
}

export async function startNginx(o: NginxOptions): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), "cassette-nginx-"));
  const prefix = (o.prefix ?? "data").replace(/^\/+|\/+$/g, "");
  const root = o.root.replace(/\/+$/, "");
  for (const t of ["body", "proxy", "fastcgi", "uwsgi", "scgi"]) mkdirSync(join(dir, "tmp", t), { recursive: true });
  const errorLog = join(dir, "error.log");
  const conf = join(dir, "nginx.conf");
  let child: ChildProcess | undefined;
  let port = 0;

  const write = (p: number) =>
    writeFileSync(conf, `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${errorLog} warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  types { application/json json; }
  default_type application/octet-stream;
  sendfile on;
  tcp_nodelay on;
  keepalive_timeout 60s;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:${p};
    server_name localhost;
    location /${prefix}/ { alias ${root}/; }
${o.extra ?? ""}
  }
}
`);

  const launch = async (): Promise<void> => {
    const logStart = existsSync(errorLog) ? readFileSync(errorLog, "utf8").length : 0;
    const proc = spawn(NGINX, ["-p", `${dir}/`, "-c", conf, "-e", errorLog], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    proc.stderr!.on("data", (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
    proc.once("error", () => {});
    child = proc;
    // Ready when the port accepts a connection; failed when the process exits first.
    for (let i = 0; i < 200; i++) {
      const state = await Promise.race([exited.then(() => "exited" as const), accepts(port).then((ok) => (ok ? "up" as const : "down" as const))]);
      if (state === "up") return;
      if (state === "exited") {
        child = undefined;
        const log = existsSync(errorLog) ? readFileSync(errorLog, "utf8").slice(logStart) : "";
        throw Object.assign(new Error(`nginx exited at start: ${(stderr + log).trim()}`), { inUse: /Address already in use/.test(stderr + log) });
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    proc.kill("SIGKILL");
    throw new Error(`nginx did not accept connections on 127.0.0.1:${port} within 5 s`);
  };

  // A free port can be taken between the probe and nginx's bind: try a few.
  for (let attempt = 0; ; attempt++) {
    port = o.port ?? await freePort();
    write(port);
    try {
      await launch();
      break;
    } catch (e) {
      if (!(e as { inUse?: boolean }).inUse || o.port || attempt >= 4) {
        rmSync(dir, { recursive: true, force: true });
        throw e;
      }
    }
  }

  const stop = async () => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((r) => proc.once("exit", () => r()));
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  };

  return {
    url: `http://127.0.0.1:${port}/${prefix}`,
    port,
    dir,
    running: () => !!child && child.exitCode === null && child.signalCode === null,
    stop,
    start: async () => {
      if (child) return;
      await launch();
    },
    errorLog: () => (existsSync(errorLog) ? readFileSync(errorLog, "utf8") : ""),
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Whether 127.0.0.1:port accepts a TCP connection. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port });
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => (s.destroy(), resolve(false)));
  });
}
