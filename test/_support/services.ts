/** The services test/run.ts starts for the suite, and how a test reaches them. */
import { runtime } from "../../runtime-adapters/index.ts";

/**
 * The test Cassandra's address with `keyspace`, or undefined when the suite runs without it
 * (`--no-cassandra`). Each runtime gets its own keyspace, as runtimes run side by side.
 */
export function testCassandra(keyspace: string): string | undefined {
  const base = runtime.env("CASSETTE_TEST_CASSANDRA");
  if (!base) return undefined;
  return base.replace(/\/[^/?]*(\?|$)/, `/${keyspace}_${runtime.name}$1`);
}

export const NO_CASSANDRA = runtime.env("CASSETTE_TEST_CASSANDRA") ? false : "Cassandra not started (test/run.ts --no-cassandra)";
