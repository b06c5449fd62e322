/**
 * A Loader's options grouped by purpose (src/loader_options.ts): each option under its group
 * and under its flat name gives the same loader; both forms at once must agree; every row of
 * OPTION_GROUPS is checked both ways and documented in the README's one options table.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed } from "../_support/random.ts";
import { flaky } from "../_support/sources.ts";
import { Loader } from "../../src/loader.ts";
import { type LoaderGroups, type LoaderOptions, OPTION_GROUPS, resolveLoaderOptions } from "../../src/loader_options.ts";
import { openSource, openStore } from "../../src/source/open.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { epochPlan } from "../../src/plan/epoch.ts";
import type { Store } from "../../src/dataset/store.ts";
import type { Source } from "../../src/source/source.ts";
import { CassetteError } from "../../src/errors.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-options-"));
let store: Store;
const ids: string[] = [];
afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function source(): Promise<Source> {
  if (!store) {
    store = await openStore(`sqlite:${join(dir, "fm.sqlite")}`);
    await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 90 });
    for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
  }
  return openSource(store, "fm");
}

async function batchesOf(loader: Loader, epoch: number): Promise<string[][]> {
  const out: string[][] = [];
  for await (const b of loader.epoch(epoch)) out.push(b.ids);
  await loader.close();
  return out;
}

type Group = keyof LoaderGroups;
type Row = { [G in Group]: { group: G; name: keyof LoaderGroups[G] & string } }[Group];
const ROWS: Row[] = Object.entries(OPTION_GROUPS).flatMap(([group, names]) => Object.keys(names).map((name) => ({ group, name }) as Row));

/**
 * Two different valid values of each option. The type asks for every option of every group,
 * so an option added to a group without a value here does not typecheck, and the loop below
 * checks its flat alias and its group both ways.
 */
const controller = new AbortController();
const VALUES: { [G in Group]: { [K in keyof LoaderGroups[G]]-?: [LoaderGroups[G][K], LoaderGroups[G][K]] } } = {
  plan: {
    batchSize: [8, 16], shuffle: [true, false], seed: [1, 2], rank: [0, 1], worldSize: [2, 3], dropLast: [true, false], pad: [true, false], rankShards: [true, false],
    mix: [{ parts: [{ ids: ["a"], weight: 1 }] }, { parts: [{ ids: ["b"], count: 1 }], samples: 1 }],
  },
  window: { prefetch: [4, "auto"], maxPrefetch: [16, 32], maxPrefetchBytes: [1 << 20, 2 << 20], rampStart: [1, 3], order: ["strict", "ready"], readAhead: [true, "auto"] },
  faults: { retries: [0, 2], onError: ["skip", "throw"], hedge: [true, { budget: 0.1 }], reaskTail: [true, false] },
  cpu: {
    workers: [0, "auto"], decode: [true, { grey: true }], decodeWorkers: [0, "auto"],
    transform: [(s) => s, { module: "./transform.ts", options: {} }], slowLane: [true, false],
  },
  lifecycle: { resume: [undefined, undefined], signal: [controller.signal, new AbortController().signal] },
  source: { balance: ["rate", "driver"], maxInFlight: [8, 16], cache: [{ path: "a.sqlite", bytes: 1 }, { path: "b.sqlite", bytes: 2, policy: "lru" }] },
};

function refusal(f: () => unknown): CassetteError {
  try {
    f();
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.is((e as CassetteError).code, "ERR_INVALID_OPTION");
    return e as CassetteError;
  }
  throw new Error("expected a refusal");
}

test("every option: its flat name and its group give the same resolved value; both at once must agree, else both are named", () => {
  assert.ok(ROWS.length >= 26, `${ROWS.length} options`);
  for (const { group, name } of ROWS) {
    const [a, b] = (VALUES[group] as Record<string, [unknown, unknown]>)[name];
    if (a === undefined) continue; // resume: a state is checked against the plan; its own test below
    const base = { store: "sqlite:unused.sqlite", dataset: "fm", ids: ["x"], ...(name === "batchSize" ? {} : { batchSize: 4 }) };
    const flat = resolveLoaderOptions({ ...base, [name]: a } as LoaderOptions);
    const grouped = resolveLoaderOptions({ ...base, [group]: { [name]: a } } as LoaderOptions);
    assert.is((flat[group] as Record<string, unknown>)[name], a, `flat '${name}' lands in '${group}'`);
    assert.is((grouped[group] as Record<string, unknown>)[name], a, `'${group}.${name}'`);
    const both = resolveLoaderOptions({ ...base, [name]: a, [group]: { [name]: a } } as LoaderOptions);
    assert.is((both[group] as Record<string, unknown>)[name], a, `'${name}' given twice alike`);
    const e = refusal(() => resolveLoaderOptions({ ...base, [name]: a, [group]: { [name]: b } } as LoaderOptions));
    assert.ok(e.message.includes(`'${name}'`) && e.message.includes(`'${group}.${name}'`) && e.message.includes("disagree"), e.message);
  }
});

test("a group that is not an object, or holds another group's option, is refused by name", () => {
  const base = { store: "sqlite:unused.sqlite", dataset: "fm", ids: ["x"], batchSize: 4 };
  let e = refusal(() => new Loader({ ...base, window: { seed: 3 } } as unknown as LoaderOptions));
  assert.match(e.message, /'window\.seed' is not an option of 'window'.*'seed' is an option of 'plan'/);
  e = refusal(() => new Loader({ ...base, faults: 3 } as unknown as LoaderOptions));
  assert.match(e.message, /'faults' must be an object of options: current value is 3/);
  // The values' own checks read the merged options: the same messages either way.
  e = refusal(() => new Loader({ ...base, window: { prefetch: 0 } }));
  assert.match(e.message, /'prefetch' must be a positive integer or "auto": current value is 0/);
  e = refusal(() => new Loader({ store: base.store, dataset: "fm", ids: ["x"], plan: { batchSize: 0 } }));
  assert.match(e.message, /'batchSize' must be a positive integer: current value is 0/);
  e = refusal(() => new Loader({ ...base, plan: { pad: true }, dropLast: true }));
  assert.match(e.message, /'pad' and 'dropLast' ask for opposite things/);
});

test("the same seed, rank and order, grouped or flat: the same batches, in the planned order; loader.options is what was given", async () => {
  const seed = freshSeed();
  await source();
  const grouped: LoaderOptions = {
    store: await source(), ids,
    plan: { batchSize: 8, seed, rank: 1, worldSize: 2, dropLast: true },
    window: { order: "strict", prefetch: 2 },
    cpu: { workers: 0 },
  };
  const g = new Loader(grouped);
  assert.is(g.options, grouped, "loader.options is the object given");
  assert.equal(g.planIdentity(), { seed, rank: 1, worldSize: 2, shuffle: true, batchSize: 8, dropLast: true, pad: false });
  const fromGroups = await batchesOf(g, 1);
  const fromFlat = await batchesOf(new Loader({ store: await source(), ids, batchSize: 8, seed, rank: 1, worldSize: 2, dropLast: true, order: "strict", prefetch: 2, workers: 0 }), 1);
  assert.equal(fromGroups, fromFlat, `seed ${seed}`);
  // Strict order follows the plan: the options reached it (rank 1 of 2, whole batches only).
  const plan = epochPlan(ids, { seed, epoch: 1, rank: 1, worldSize: 2, batchSize: 8, dropLast: true });
  assert.equal(fromGroups.flat(), plan, `seed ${seed}`);
  assert.is(plan.length, 88, "90 a rank (90 samples of each idx file), 2 dropped");
  const mixed = await batchesOf(new Loader({ store: await source(), ids, batchSize: 8, plan: { seed, rank: 1, worldSize: 2 }, dropLast: true, window: { order: "strict" }, workers: 0 }), 1);
  assert.equal(mixed, fromFlat, "some options grouped, some flat");
});

test("faults and cpu grouped act as their flat names do: no retry, and the failing samples skipped", async () => {
  await source();
  const failing = new Set(ids.slice(0, 5));
  const run = async (o: Partial<LoaderOptions>) => {
    const src = flaky(await source(), failing, Infinity);
    const loader = new Loader({ store: src, ids, batchSize: 10, seed: 1, ...o } as LoaderOptions);
    const n = (await batchesOf(loader, 0)).flat().length;
    return { n, skipped: loader.skipped(0), attempts: [...failing].map((id) => src.attempts.get(id)) };
  };
  const grouped = await run({ faults: { retries: 0, onError: "skip" }, cpu: { workers: 0 } });
  assert.equal(grouped, { n: ids.length - 5, skipped: 5, attempts: [1, 1, 1, 1, 1] });
  assert.equal(await run({ retries: 0, onError: "skip", workers: 0 }), grouped);
});

test("resume under lifecycle: a state taken mid-epoch continues with the rest, as the flat `resume` does", async () => {
  await source();
  const first = new Loader({ store: await source(), ids, plan: { batchSize: 10, seed: 5 }, cpu: { workers: 0 } });
  const seen: string[] = [];
  for await (const b of first.epoch(0)) {
    seen.push(...b.ids);
    if (seen.length >= 30) break;
  }
  const state = first.state();
  await first.close();
  const rest = async (o: Partial<LoaderOptions>) => (await batchesOf(new Loader({ store: await source(), ids, plan: { batchSize: 10, seed: 5 }, workers: 0, ...o } as LoaderOptions), 0)).flat().sort();
  const grouped = await rest({ lifecycle: { resume: state } });
  assert.equal(grouped, ids.filter((id) => !seen.includes(id)).sort());
  assert.equal(await rest({ resume: state }), grouped);
});

test("the README's options table lists every option once, under its group, with its flat alias", () => {
  const readme = readFileSync(join(runtime.cwd(), "README.md"), "utf8");
  const rows = [...readme.matchAll(/^\| `(\w+)` \| `(\w+)` \| `(\w+)` \|/gm)].map((m) => ({ group: m[1], name: m[2], alias: m[3] }));
  assert.equal(rows.map((r) => `${r.group}.${r.name}`).sort(), ROWS.map((r) => `${r.group}.${r.name}`).sort());
  for (const r of rows) assert.is(r.alias, r.name, `${r.group}.${r.name}'s flat alias`);
});
