/**
 * Several sources read as one, for a mix of datasets, splits or stores (plan/mix.ts, NOTE
 * [ Mixing ]): each request goes to the source of the part that holds the id, and a part's
 * labels may be mapped onto a class list common to the mix.
 */
import { CassetteError } from "../../errors.ts";
import { partIndex } from "../../plan/mix.ts";
import type { FetchCallback, Fetched, Source } from "../source.ts";

/** One part of a mixed source: the source and the ids it serves. */
export interface MixSourcePart {
  /** A name for messages (e.g. the dataset's). */
  name?: string;
  /** The source that serves this part. */
  source: Source;
  /** The part's ids: requests for them go to `source`. */
  ids: readonly string[];
  /**
   * Its classes onto the mix's: `labels[c]` is the common class of this part's class `c`
   * (default: its own numbering). A class it lacks is an error naming the sample.
   */
  labels?: readonly number[];
}

/** Sources as one: a request goes to the part that holds its id. */
export class MixSource implements Source {
  /** "mix of" the parts' names. */
  readonly name: string;
  readonly #parts: readonly MixSourcePart[];
  readonly #where: Map<string, number>;
  readonly #listeners: (() => void)[] = [];

  /** The parts, which must not share an id (named if they do). */
  constructor(parts: readonly MixSourcePart[]) {
    if (!parts.length) throw new CassetteError("ERR_INVALID_OPTION", "Cannot mix sources as none was given");
    this.#parts = parts;
    this.name = `mix of ${parts.map((p, k) => p.name ?? p.source.name ?? `part ${k}`).join(", ")}`;
    this.#where = partIndex(parts);
    for (const p of parts) p.source.onDrain(() => this.#drained());
  }

  /** Every part's ids. */
  ids(): string[] {
    return [...this.#where.keys()];
  }

  /** Each part hears the order of its own ids (a cache under a part plans with it). */
  plan(epoch: number, ids: readonly string[]): void {
    this.#parts.forEach((p, k) => p.source.plan?.(epoch, ids.filter((id) => this.#where.get(id) === k)));
  }

  /** Asks the part that holds `id`; an id no part holds is an error naming it. */
  fetch(id: string, done: FetchCallback<Fetched>): boolean {
    const k = this.#where.get(id);
    if (k === undefined) {
      queueMicrotask(() => done(new CassetteError("ERR_STORE", `Cannot find sample ${id} in ${this.name}: no part holds it`)));
      return true;
    }
    const map = this.#parts[k].labels;
    if (!map) return this.#parts[k].source.fetch(id, done);
    return this.#parts[k].source.fetch(id, (err, s) => {
      if (err || !s) return done(err, s);
      const label = s.label < 0 ? s.label : map[s.label];
      if (label === undefined) return done(new CassetteError("ERR_MALFORMED_INPUT", `Cannot map sample ${id}'s class ${s.label} from ${this.#label(k)} onto the mix's classes: its 'labels' has ${map.length}`));
      done(null, { ...s, label });
    });
  }

  /** Called when any part drains. */
  onDrain(listener: () => void): void {
    this.#listeners.push(listener);
  }

  /** Requests in flight at every part. */
  inFlight(): number {
    return this.#parts.reduce((n, p) => n + p.source.inFlight(), 0);
  }

  /** Closes every part's source. */
  async close(): Promise<void> {
    await Promise.all(this.#parts.map((p) => p.source.close()));
  }

  #drained(): void {
    for (const l of this.#listeners) l();
  }

  #label(k: number): string {
    return this.#parts[k].name ?? `part ${k}`;
  }
}
