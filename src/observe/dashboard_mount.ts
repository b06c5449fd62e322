/**
 * The dashboard's figures as a component a web page mounts (`mountDashboard`, exported by
 * `cassette/browser`): the tiles and charts the served dashboard shows (dashboard.ts), laid out
 * by the same markup and drawn by the same function (dashboard_figures.ts) from the same frames
 * (a DashboardRun, dashboard_run.ts), but put in place in the page's own element rather than
 * pushed from a server. Nothing here imports a built-in: it runs in any page.
 *
 * @example
 * ```ts ignore
 * import { fit, Loader, mountDashboard } from "cassette/browser";
 * const loader = new Loader({ store: "wds:/shards/fm.index.json", ids, batchSize: 32, decode: { grey: true } });
 * const dash = mountDashboard(document.getElementById("figures")!, { loader });
 * await fit(model, { epochs: 1, train: (e) => loaderBatches(loader, pre, e, { classes: 10 }), onStep: async (epoch) => {
 *   const m = await model.trainMetrics();
 *   dash.update({ epoch, loss: { train: m.loss }, accuracy: { train: m.accuracy } }); // on top of loader.stats()
 * } });
 * dash.update({ done: true });
 * ```
 */
import { CassetteError } from "../errors.ts";
import { DASHBOARD_CSS, type DashboardFigures, dashboardFigures, dashboardMarkup, escapeXml } from "./dashboard_figures.ts";
import { type DashboardFrame, DashboardRun, frameFromStats, type HistoryPoint, type ServedFrame } from "./dashboard_run.ts";
import type { LoaderStats } from "./stats.ts";

/**
 * The element the component is mounted in: what it uses of a DOM element (any `HTMLElement`
 * has it).
 */
export interface DashboardElement {
  /** The element's content: the component's markup replaces it. */
  innerHTML: string;
  /** Finds a node inside the element. */
  querySelector(selectors: string): unknown;
  /** Finds the nodes inside the element. */
  querySelectorAll(selectors: string): unknown;
  /** The element's classes: the component adds `cassette-dashboard` (its style is scoped to it). */
  readonly classList: { add(token: string): void; remove(token: string): void };
}

/** What the component reads of a DOM node it fills. */
interface FigureNode {
  dataset: Record<string, string | undefined>;
  textContent: string | null;
  innerHTML: string;
  hidden: boolean;
}

/** How `mountDashboard` shows a run: its heading, where its figures come from, the ids it gives. */
export interface MountDashboardOptions {
  /** A heading above the figures (none by default). */
  title?: string;
  /**
   * A Loader (anything with `stats()`): `update()` then starts each frame from its figures
   * (`frameFromStats(loader.stats())`), and what `update` is given wins over them.
   */
  loader?: { stats(): LoaderStats };
  /** Gives each tile the id `PREFIXm-NAME` and each chart `PREFIXchart-ID` (no ids by default: a page may mount several). */
  idPrefix?: string;
}

/** A mounted dashboard (`mountDashboard`): give it frames with `update`, take it off the page with `close`. */
export interface MountedDashboard {
  /**
   * Takes a frame and redraws the figures; returns what it drew. Without a `loader` the frame
   * must be whole (`seconds`, `step`, `samples`, `imagesPerSec`, `waitShare`); with one, what
   * is given is laid over the loader's figures.
   */
  update(frame?: Partial<DashboardFrame>): DashboardFigures;
  /** The latest frame as drawn (undefined before the first update). */
  latest(): ServedFrame | undefined;
  /** The curves' points drawn (at most HISTORY_CAP, NOTE [ Dashboard history ]). */
  history(): readonly HistoryPoint[];
  /** Empties the element; a later `update` is refused. */
  close(): void;
}

const NEEDED = ["seconds", "step", "samples", "imagesPerSec", "waitShare"] as const;

/**
 * Mounts the dashboard's figures in `element` (its content is replaced): the served
 * dashboard's tiles (samples, images/s, MB/s, wait share, losses, accuracies, batch times…) and
 * charts (loss, accuracy, images/s, wait share, batch-time histogram, per-connection MB/s,
 * window depth), hidden loss and accuracy ones until a frame has them.
 */
export function mountDashboard(element: DashboardElement, options: MountDashboardOptions = {}): MountedDashboard {
  const run = new DashboardRun();
  const heading = options.title === undefined ? "" : `<h2 class="title">${escapeXml(options.title)}</h2>\n`;
  element.classList.add("cassette-dashboard");
  element.innerHTML = `<style>${DASHBOARD_CSS}</style>\n${heading}${dashboardMarkup(options.idPrefix)}`;
  const one = (selector: string) => element.querySelector(selector) as FigureNode | null;
  const all = (selector: string) => [...(element.querySelectorAll(selector) as Iterable<FigureNode>)];
  let closed = false;
  return {
    update(frame = {}) {
      if (closed) throw new CassetteError("ERR_INVALID_OPTION", "Cannot update the dashboard as it was closed: mount another");
      const whole = options.loader ? frameFromStats(options.loader.stats(), frame) : frame;
      const missing = NEEDED.filter((k) => typeof whole[k] !== "number");
      if (missing.length) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot draw the dashboard's frame as it has no ${missing.join(", ")}: give them, or mount it with a loader whose stats() fill them`);
      }
      const { served } = run.update(whole as DashboardFrame);
      const figures = dashboardFigures(served, run.points);
      for (const t of figures.tiles) {
        const el = one(`[data-metric="${t.name}"]`);
        if (!el) continue;
        el.dataset.value = t.value === undefined ? "" : String(t.value);
        el.textContent = t.text;
      }
      for (const c of figures.charts) {
        const el = one(`[data-chart="${c.id}"]`);
        if (el) el.innerHTML = c.svg;
      }
      for (const [k, has] of Object.entries(figures.shown)) for (const el of all(`[data-needs="${k}"]`)) el.hidden = !has;
      return figures;
    },
    latest: () => run.latest,
    history: () => run.points,
    close() {
      if (closed) return;
      closed = true;
      element.innerHTML = "";
      element.classList.remove("cassette-dashboard");
    },
  };
}
