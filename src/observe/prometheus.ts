/**
 * Prometheus' text exposition format (version 0.0.4), written by hand: a family is its
 * `# HELP` and `# TYPE` lines followed by its samples, one `name{label="value"} number` a line.
 * Counters end in `_total`; a histogram is `_bucket{le=…}` lines (cumulative, ending at `+Inf`),
 * `_sum` and `_count`. https://prometheus.io/docs/instrumenting/exposition_formats/
 */

/** The content type a scraper expects for this format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export type Labels = Record<string, string>;

/** Collects metric families and writes them as one exposition. */
export class PrometheusText {
  readonly #lines: string[] = [];

  /** A gauge: a value that goes up and down. Nothing is written for an undefined value. */
  gauge(name: string, help: string, value: number | undefined | [Labels, number][]): this {
    return this.#family(name, "gauge", help, value);
  }

  /** A counter (`name` must end in `_total`): a count that only grows over the run. */
  counter(name: string, help: string, value: number | undefined | [Labels, number][]): this {
    if (!name.endsWith("_total")) throw new Error(`counter ${name} must end in _total`);
    return this.#family(name, "counter", help, value);
  }

  /**
   * A histogram from per-bucket counts: `counts[i]` observations fell at or below `bounds[i]`
   * and above the bound before it; `counts[bounds.length]` are above the last bound (+Inf).
   */
  histogram(name: string, help: string, bounds: readonly number[], counts: readonly number[], sum: number): this {
    this.#lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} histogram`);
    let cumulative = 0;
    for (let i = 0; i <= bounds.length; i++) {
      cumulative += counts[i] ?? 0;
      this.#lines.push(`${name}_bucket{le="${i < bounds.length ? number(bounds[i]) : "+Inf"}"} ${cumulative}`);
    }
    this.#lines.push(`${name}_sum ${number(sum)}`, `${name}_count ${cumulative}`);
    return this;
  }

  toString(): string {
    return this.#lines.length ? this.#lines.join("\n") + "\n" : "";
  }

  #family(name: string, type: "gauge" | "counter", help: string, value: number | undefined | [Labels, number][]): this {
    if (value === undefined || (Array.isArray(value) && value.length === 0)) return this;
    this.#lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`);
    if (typeof value === "number") this.#lines.push(`${name} ${number(value)}`);
    else for (const [labels, v] of value) this.#lines.push(`${name}${labelSet(labels)} ${number(v)}`);
    return this;
  }
}

/** Go's float syntax as Prometheus reads it: NaN, +Inf, -Inf, else the shortest decimal. */
function number(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

function labelSet(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  return `{${parts.join(",")}}`;
}

/** HELP text escapes only backslash and newline (quotes are literal there). */
function escapeHelp(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}
