/**
 * The dashboard's page (src/observe/dashboard.ts serves it at `/`): one self-contained HTML
 * document, with no framework and nothing fetched from elsewhere. Its script listens to
 * `/events` and puts each frame's figures in place: the server draws them (tiles' texts, the
 * charts' SVG) with dashboard_figures.ts, the same function the component a page mounts uses
 * (dashboard_mount.ts), so the two show the same figures from the same frames.
 *
 * Each figure sits in an element with `data-metric="NAME"`, and its unformatted number is in
 * `data-value` (empty while unknown). The element's id is `m-NAME`; a chart's `<svg>` is
 * `chart-ID`. Tests read them there (test/_support/browser.ts). `#status` has `data-status`:
 * connecting, live, finished or disconnected. `body[data-frames]` counts the frames the page
 * has received.
 */
import { DASHBOARD_CSS, dashboardMarkup, escapeXml } from "./dashboard_figures.ts";

/** The page for a dashboard titled `title`. */
export function dashboardPage(title: string): string {
  const t = escapeXml(title);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${t}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px; color: #222; background: #fafafa; }
header { display: flex; align-items: baseline; gap: 16px; }
h1 { font-size: 20px; margin: 0 0 8px; }
#status { font-size: 12px; padding: 2px 8px; border-radius: 8px; background: #ddd; }
#status[data-status="live"] { background: #cfe8cf; }
#status[data-status="finished"] { background: #cfdff5; }
#status[data-status="disconnected"] { background: #f5d0c8; }
${DASHBOARD_CSS}
</style>
</head>
<body data-frames="0">
<header><h1>${t}</h1><span id="status" data-status="connecting">connecting…</span><span id="updated"></span></header>
<main class="cassette-dashboard">
${dashboardMarkup("")}
</main>
<script>
"use strict";
let latest = null, frames = 0;

/** Puts the figures the server drew (dashboard_figures.ts's DashboardFigures) in place. */
function show(figures) {
  for (const t of figures.tiles) {
    const el = document.querySelector('[data-metric="' + t.name + '"]');
    el.dataset.value = t.value === undefined ? "" : String(t.value);
    el.textContent = t.text;
  }
  for (const c of figures.charts) document.querySelector('[data-chart="' + c.id + '"]').innerHTML = c.svg;
  for (const [k, has] of Object.entries(figures.shown)) document.querySelectorAll('[data-needs="' + k + '"]').forEach((el) => { el.hidden = !has; });
}

function status(s, text) {
  const el = document.getElementById("status");
  el.dataset.status = s;
  el.textContent = text;
}

const events = new EventSource("events");
events.addEventListener("frame", (e) => {
  const m = JSON.parse(e.data);
  latest = m.frame;
  document.body.dataset.frames = String(++frames);
  show(m.figures);
  document.getElementById("updated").textContent = new Date(latest.time).toLocaleTimeString();
  if (latest.done) { status("finished", "finished"); events.close(); }
  else status("live", "live");
});
events.addEventListener("error", () => { if (!(latest && latest.done)) status("disconnected", "disconnected: retrying"); });
</script>
</body>
</html>
`;
}
