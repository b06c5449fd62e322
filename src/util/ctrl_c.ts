/**
 * Ctrl-C while samples are being written into a store (`cassette ingest`, train.ts's first
 * run): the first stops the work after the samples in flight, through the returned signal, so
 * that it can say what is stored; a second exits at once (status 130). Each stored sample is
 * whole either way, and running the same command again resumes.
 */
import process from "node:process";

export function stopOnCtrlC(storeAddress: string): { signal: AbortSignal; dispose(): void } {
  const stop = new AbortController();
  const onSigint = () => {
    if (!stop.signal.aborted) return stop.abort();
    console.error(`\ningest stopped at once (second Ctrl-C): every sample in ${storeAddress} is whole; run the same command again to resume`);
    process.exit(130);
  };
  process.on("SIGINT", onSigint);
  return { signal: stop.signal, dispose: () => void process.off("SIGINT", onSigint) };
}
