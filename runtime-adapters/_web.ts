/** The web `Worker` pieces Deno, Bun and the browser share (no Node built-ins: the browser adapter imports this file). */
import type { WorkerHandle } from "./runtime.ts";

/**
 * The worker side says it listens with this message. Bun drops messages that arrive while a
 * worker module is still evaluating (our adapters load with top-level await), so the parent
 * holds its messages until the worker has said it is ready.
 */
export const READY = "__cassette_worker_ready__";

/** A web `Worker` (Deno, Bun) behind the common handle. */
export function webWorker(url: URL): WorkerHandle {
  const w = new Worker(url.href, { type: "module" });
  let pending: [unknown, Transferable[]][] | null = [];
  const h: WorkerHandle = {
    postMessage: (m, t) => (pending ? pending.push([m, t ?? []]) : w.postMessage(m, t ?? [])),
    onmessage: null,
    onerror: null,
    terminate: () => w.terminate(),
  };
  w.onmessage = (ev: MessageEvent) => {
    if (ev.data === READY) {
      for (const [m, t] of pending ?? []) w.postMessage(m, t);
      pending = null;
      return;
    }
    h.onmessage?.({ data: ev.data });
  };
  w.onerror = (ev: ErrorEvent) => {
    ev.preventDefault?.();
    h.onerror?.(ev.error instanceof Error ? ev.error : new Error(ev.message));
  };
  return h;
}

export function webWorkerScope() {
  const self = globalThis as unknown as {
    postMessage(m: unknown, t?: Transferable[]): void;
    onmessage: ((ev: MessageEvent) => void) | null;
  };
  return {
    postMessage: (m: unknown, t?: Transferable[]) => self.postMessage(m, t ?? []),
    onMessage: (fn: (d: unknown) => void) => {
      self.onmessage = (ev) => fn(ev.data);
      self.postMessage(READY);
    },
  };
}

