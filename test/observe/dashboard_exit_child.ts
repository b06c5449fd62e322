/**
 * For dashboard.test.ts: serves a dashboard, prints its URL, and closes it once the file named
 * by its argument exists (the test has its clients connected by then). After close() nothing
 * of the dashboard's may hold the process: it must exit on its own.
 */
import { existsSync } from "node:fs";
import { startDashboard } from "../../src/observe/dashboard.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const flag = runtime.args()[0];
const dash = await startDashboard({ port: 0 });
dash.update({ seconds: 0, step: 0, samples: 0, imagesPerSec: 0, waitShare: 0 });
console.log(dash.url);
const poll = setInterval(async () => {
  if (!existsSync(flag)) return;
  clearInterval(poll);
  const t0 = runtime.now();
  await dash.close();
  console.log(`closed in ${(runtime.now() - t0).toFixed(0)} ms`);
}, 20);
