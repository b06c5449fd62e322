/**
 * train.ts --dashboard watched in headless Chromium: the figures move while it trains (samples,
 * steps, the loss once read back) and end equal to its --json report.
 */
import * as assert from "uvu/assert";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { openPage } from "../_support/browser.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-train-dashboard-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ARTIFACTS = join(runtime.cwd(), "data", "test-artifacts");
// The CNN on lavapipe: a few seconds an epoch on 300 samples, long enough to watch.
const LIMIT = 300, BATCH = 16, EPOCHS = 3;

test("train.ts --dashboard: Chromium shows the run's figures moving, and at the end its --json's", async () => {
  const [cmd, ...rest] = runtime.scriptCommand(join(runtime.cwd(), "train.ts"), [
    "--limit", String(LIMIT), "--batch", String(BATCH), "--epochs", String(EPOCHS), "--model", "cnn", "--out", join(dir, "run"), "--json", "--dashboard",
  ]);
  const page = await openPage(undefined, { width: 1280, height: 1100 });
  const child = spawn(cmd, rest, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  let ended = false;
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => ((ended = true), resolve(code))));
  try {
    // The URL is on stderr with --json too (ingesting the default store comes first).
    let url: string | undefined;
    for (let i = 0; i < 3000 && !url && !ended; i++) {
      url = /^dashboard (http:\S+)$/m.exec(err)?.[1];
      if (!url) await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(url, `train.ts served no dashboard:\n${err.slice(-2000)}`);
    assert.match(url!, /^http:\/\/127\.0\.0\.1:\d+\/$/, "loopback by default");
    await page.goto(url!);
    const seen: { samples: number; step: number | null; loss: number | null }[] = [];
    while (!ended) {
      const m = await page.metrics();
      if (m.samples !== null && (seen.length === 0 || m.samples !== seen.at(-1)!.samples)) seen.push({ samples: m.samples, step: m.step, loss: m["loss-train"] });
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.is(await exited, 0, err.slice(-2000));
    const report = JSON.parse(out.trim().split("\n").pop()!);
    const total = LIMIT * EPOCHS, steps = Math.ceil(LIMIT / BATCH) * EPOCHS;
    const during = seen.filter((s) => s.samples < total);
    assert.ok(during.length >= 3, `the page showed ${during.length} sample counts during the run: ${JSON.stringify(seen)}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].samples > seen[i - 1].samples, "samples only grow");
    assert.ok(seen.some((s) => s.loss !== null && s.loss > 0), `a training loss shown during the run: ${JSON.stringify(seen)}`);
    // The last frame reached the page before the server closed.
    await page.waitFor(`document.getElementById("status").dataset.status === "finished"`, 5000);
    const m = await page.metrics();
    const last = report.epochs.at(-1);
    const expect: [string, number][] = [
      ["samples", total], ["step", steps], ["epoch", EPOCHS],
      ["loss-train", last.loss], ["loss-test", last.testLoss], ["accuracy-train", last.trainAccuracy], ["accuracy-test", last.testAccuracy],
      ["prefetch", report.loader.prefetch], ["retries", report.loader.retries], ["skipped", report.loader.errors],
    ];
    for (const [name, want] of expect) assert.is(m[name], want, `${name} on the page (${m[name]}) and in --json (${want})`);
    assert.is(report.epochs.reduce((a: number, e: { samples: number }) => a + e.samples, 0), total);
    const curve = await page.evaluate<number>(`document.querySelectorAll("#chart-loss path, #chart-loss polyline").length`);
    assert.ok(curve > 0, "the loss chart has a curve");
    // A training run has them: its loss and accuracy tiles and charts are shown, and the
    // legends of train and test carry a swatch of their line's colour.
    assert.equal(await page.evaluate(`[...document.querySelectorAll("[data-needs]")].map((e) => e.hidden)`), [false, false, false, false, false, false]);
    assert.equal(await page.evaluate(`[...document.querySelectorAll("#chart-loss rect.swatch")].map((r) => r.getAttribute("fill"))`), await page.evaluate(`[...document.querySelectorAll("#chart-loss path")].map((p) => p.getAttribute("stroke"))`));
    mkdirSync(ARTIFACTS, { recursive: true });
    const bytes = await page.screenshot(join(ARTIFACTS, `train-dashboard-${runtime.name}.png`));
    assert.ok(bytes > 10_000, `a screenshot of ${bytes} bytes`);
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
    await page.close();
  }
}, { timeoutMs: 240_000 });
