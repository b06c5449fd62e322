/** CPU time for benchmarks that report CPU seconds per unit of work. */
import { readFileSync } from "node:fs";

/** The process's CPU seconds so far (every thread: user + system), from /proc (Linux), or undefined. */
export function processCpuSeconds(): number | undefined {
  try {
    const f = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return undefined;
  }
}
