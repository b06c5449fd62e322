/**
 * A page in a real headless Chromium (Debian's `chromium`, installed by tools/setup.sh), driven
 * over the DevTools protocol with the runtime's own WebSocket: no driver package, the same on
 * Bun, Deno and Node. For tests that open a page cassette serves (the dashboard) and read what
 * it shows.
 *
 *   const page = await openPage(dash.url);              // starts Chromium, loads the page
 *   await page.waitFor("document.body.dataset.frames > 0");
 *   const m = await page.metrics();                      // { samples: 1280, "wait-share": 0.1, … }
 *   await page.screenshot("data/test-artifacts/dashboard.png");
 *   await page.close();                                  // ends Chromium, removes its profile
 *
 * Every call has a time limit and fails with what it waited for; Chromium's stderr tail is in
 * the error when it does not start. A missing Chromium fails with the set-up command to run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { runtime } from "../../runtime-adapters/index.ts";

/** Where the browser is: $CASSETTE_CHROMIUM, else Debian's /usr/bin/chromium. */
export function chromiumPath(): string {
  const path = runtime.env("CASSETTE_CHROMIUM") ?? "/usr/bin/chromium";
  if (!existsSync(path)) {
    throw new Error(`Cannot open a browser as Chromium is not at ${path}: run \`bash tools/setup.sh\` (it installs Debian's chromium), or set CASSETTE_CHROMIUM to its path`);
  }
  return path;
}

export interface PageOptions {
  /** The viewport in CSS pixels (default 1280 × 1000); screenshots take the whole page. */
  width?: number;
  height?: number;
  /** Limit for each step (start, navigation, each call), in ms (default 15 000). */
  timeoutMs?: number;
  /**
   * Start Chromium with WebGPU (`--enable-unsafe-webgpu`: on a machine without a GPU, a
   * SwiftShader adapter that runs compute shaders), for pages that train; default off, as
   * Chromium ships on Linux (no `navigator.gpu`).
   */
  webgpu?: boolean;
}

export interface Page {
  /** Chromium's pid (its own process group). */
  readonly pid: number;
  /** Loads `url` and waits for its load event. */
  goto(url: string): Promise<void>;
  /** The value of a JavaScript expression in the page (awaited if a promise; JSON-able values only). */
  evaluate<T = unknown>(expression: string): Promise<T>;
  /** Polls `expression` every 50 ms until it is truthy, or fails after `timeoutMs` naming it. */
  waitFor(expression: string, timeoutMs?: number): Promise<void>;
  /**
   * The page's figures: every element with `data-metric="NAME"`, as NAME → the number in its
   * `data-value` (null when empty or not a number). The dashboard page marks its figures so.
   */
  metrics(): Promise<Record<string, number | null>>;
  /** The text of the element with this id (null when there is none). */
  text(id: string): Promise<string | null>;
  /** Writes a PNG of the whole page to `path` (folders made); returns its size in bytes. */
  screenshot(path: string): Promise<number>;
  /** Messages the page logged and errors it threw, in order (for a failing test's message). */
  readonly console: string[];
  /** Closes the browser and removes its profile folder. Safe to call twice. */
  close(): Promise<void>;
}

/** Starts a headless Chromium with one page and, when given, loads `url` in it. */
export async function openPage(url?: string, options: PageOptions = {}): Promise<Page> {
  const limit = options.timeoutMs ?? 15_000;
  const profile = mkdtempSync(join(tmpdir(), "cassette-chromium-"));
  // The flags that make Chromium quiet and self-contained on a machine without a network or a
  // display, as root (no sandbox): nothing is fetched in the background at start.
  const gpu = options.webgpu ? ["--enable-unsafe-webgpu"] : ["--disable-gpu"];
  const args = [
    "--headless", "--no-sandbox", ...gpu, "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
    `--user-data-dir=${profile}`, "--remote-debugging-port=0", "--remote-allow-origins=*",
    `--window-size=${options.width ?? 1280},${options.height ?? 1000}`, "about:blank",
  ];
  const child = spawn(chromiumPath(), args, { stdio: ["ignore", "ignore", "pipe"], detached: true });
  let stderr = "";
  const cleanup = () => {
    // The whole group: the renderer and zygote processes too (ours: started above).
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch { /* already gone */ }
    rmSync(profile, { recursive: true, force: true });
  };
  let cdp: Cdp;
  try {
    const endpoint = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Chromium did not start within ${limit} ms:\n${stderr.slice(-2000)}`)), limit);
      child.stderr!.on("data", (d) => {
        stderr += d;
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.on("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`Chromium exited (${code ?? signal}) before it listened:\n${stderr.slice(-2000)}`));
      });
      child.on("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
    // Chromium's stderr is read on: a full pipe would stall the browser.
    cdp = await Cdp.connect(endpoint, limit);
  } catch (e) {
    cleanup();
    throw e;
  }
  const page = await PageImpl.attach(cdp, child, cleanup, limit, options);
  if (url) {
    try {
      await page.goto(url);
    } catch (e) {
      await page.close();
      throw e;
    }
  }
  return page;
}

class PageImpl implements Page {
  readonly console: string[] = [];
  readonly #cdp: Cdp;
  readonly #child: ChildProcess;
  readonly #cleanup: () => void;
  readonly #session: string;
  readonly #limit: number;
  #closed?: Promise<void>;

  private constructor(cdp: Cdp, child: ChildProcess, cleanup: () => void, session: string, limit: number) {
    this.#cdp = cdp;
    this.#child = child;
    this.#cleanup = cleanup;
    this.#session = session;
    this.#limit = limit;
  }

  static async attach(cdp: Cdp, child: ChildProcess, cleanup: () => void, limit: number, o: PageOptions): Promise<PageImpl> {
    try {
      const { targetId } = await cdp.send<{ targetId: string }>("Target.createTarget", { url: "about:blank" });
      // One connection, the page's messages tagged with its session (the "flat" mode).
      const { sessionId } = await cdp.send<{ sessionId: string }>("Target.attachToTarget", { targetId, flatten: true });
      const page = new PageImpl(cdp, child, cleanup, sessionId, limit);
      cdp.on("Runtime.consoleAPICalled", sessionId, (p) => {
        const args = (p.args as { value?: unknown; description?: string }[]).map((a) => a.value ?? a.description);
        page.console.push(`console.${p.type}: ${args.join(" ")}`);
      });
      cdp.on("Runtime.exceptionThrown", sessionId, (p) => {
        const d = p.exceptionDetails as { text: string; exception?: { description?: string } };
        page.console.push(`exception: ${d.exception?.description ?? d.text}`);
      });
      await cdp.send("Page.enable", {}, sessionId);
      await cdp.send("Runtime.enable", {}, sessionId);
      await cdp.send("Emulation.setDeviceMetricsOverride", { width: o.width ?? 1280, height: o.height ?? 1000, deviceScaleFactor: 1, mobile: false }, sessionId);
      return page;
    } catch (e) {
      cdp.close();
      cleanup();
      throw e;
    }
  }

  get pid(): number {
    return this.#child.pid!;
  }

  async goto(url: string): Promise<void> {
    const loaded = this.#cdp.once("Page.loadEventFired", this.#session, this.#limit, `the load event of ${url}`);
    const r = await this.#cdp.send<{ errorText?: string }>("Page.navigate", { url }, this.#session);
    if (r.errorText) {
      loaded.catch(() => {});
      throw new Error(`Chromium could not load ${url}: ${r.errorText}`);
    }
    await loaded;
  }

  async evaluate<T>(expression: string): Promise<T> {
    const r = await this.#cdp.send<{ result: { value?: unknown }; exceptionDetails?: { text: string; exception?: { description?: string } } }>(
      "Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true }, this.#session,
    );
    if (r.exceptionDetails) throw new Error(`in the page, ${expression}: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value as T;
  }

  async waitFor(expression: string, timeoutMs = this.#limit): Promise<void> {
    const end = performance.now() + timeoutMs;
    for (;;) {
      if (await this.evaluate<boolean>(`Boolean(${expression})`)) return;
      if (performance.now() > end) {
        throw new Error(`waited ${timeoutMs} ms in the page for ${expression}${this.console.length ? `; the page logged:\n${this.console.slice(-10).join("\n")}` : ""}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  metrics(): Promise<Record<string, number | null>> {
    return this.evaluate(`Object.fromEntries([...document.querySelectorAll("[data-metric]")].map((e) => {
      const v = e.dataset.value;
      return [e.dataset.metric, v === undefined || v === "" || !Number.isFinite(Number(v)) ? null : Number(v)];
    }))`);
  }

  text(id: string): Promise<string | null> {
    return this.evaluate(`document.getElementById(${JSON.stringify(id)})?.textContent ?? null`);
  }

  async screenshot(path: string): Promise<number> {
    const { data } = await this.#cdp.send<{ data: string }>("Page.captureScreenshot", { format: "png", captureBeyondViewport: true }, this.#session);
    const png = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, png);
    return png.length;
  }

  close(): Promise<void> {
    return (this.#closed ??= (async () => {
      // Asked first, so that Chromium ends its own children; then the group, whatever is left.
      const exited = new Promise<void>((r) => this.#child.exitCode !== null ? r() : this.#child.once("exit", () => r()));
      try {
        await Promise.race([this.#cdp.send("Browser.close"), new Promise((r) => setTimeout(r, 2000))]);
      } catch { /* the connection may close before the answer */ }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
      this.#cdp.close();
      this.#cleanup();
    })());
  }
}

type Params = Record<string, unknown>;

/** One DevTools protocol connection: commands by id, events by method and session. */
class Cdp {
  readonly #ws: WebSocket;
  readonly #limit: number;
  #next = 1;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; method: string }>();
  readonly #listeners = new Set<{ method: string; session: string; fn: (p: Params) => void }>();
  #closedWhy: string | undefined;

  private constructor(ws: WebSocket, limit: number) {
    this.#ws = ws;
    this.#limit = limit;
    ws.onmessage = (ev) => {
      const m = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: { message: string }; method?: string; params?: Params; sessionId?: string };
      if (m.id !== undefined) {
        const p = this.#pending.get(m.id);
        this.#pending.delete(m.id);
        if (m.error) p?.reject(new Error(`${p.method}: ${m.error.message}`));
        else p?.resolve(m.result);
      } else if (m.method) {
        for (const l of this.#listeners) if (l.method === m.method && l.session === (m.sessionId ?? "")) l.fn(m.params ?? {});
      }
    };
    ws.onclose = () => {
      this.#closedWhy = "the DevTools connection closed";
      for (const p of this.#pending.values()) p.reject(new Error(`${p.method}: ${this.#closedWhy}`));
      this.#pending.clear();
    };
  }

  static connect(url: string, limit: number): Promise<Cdp> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const timer = setTimeout(() => reject(new Error(`no DevTools connection to ${url} within ${limit} ms`)), limit);
      ws.onopen = () => {
        clearTimeout(timer);
        resolve(new Cdp(ws, limit));
      };
      ws.onerror = () => {
        clearTimeout(timer);
        reject(new Error(`cannot connect to Chromium's DevTools at ${url}`));
      };
    });
  }

  send<T = unknown>(method: string, params: Params = {}, sessionId?: string): Promise<T> {
    if (this.#closedWhy) return Promise.reject(new Error(`${method}: ${this.#closedWhy}`));
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`${method}: no answer from Chromium within ${this.#limit} ms`));
      }, this.#limit);
      this.#pending.set(id, {
        method,
        resolve: (v) => (clearTimeout(timer), resolve(v as T)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.#ws.send(JSON.stringify({ id, method, params, ...(sessionId && { sessionId }) }));
    });
  }

  on(method: string, session: string, fn: (p: Params) => void): () => void {
    const l = { method, session, fn };
    this.#listeners.add(l);
    return () => this.#listeners.delete(l);
  }

  /** The next `method` event of `session`, or an error naming `what` after `limit` ms. */
  once(method: string, session: string, limit: number, what: string): Promise<Params> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`waited ${limit} ms for ${what}`));
      }, limit);
      const off = this.on(method, session, (p) => {
        clearTimeout(timer);
        off();
        resolve(p);
      });
    });
  }

  close(): void {
    this.#closedWhy ??= "closed";
    try {
      this.#ws.close();
    } catch { /* already closed */ }
  }
}
