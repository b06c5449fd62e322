#!/usr/bin/env bash
# quiet.sh [jpeg] [read]: on the lent GPU machine, once tools/gpu/unpack.sh has installed the kit:
# the benchmarks whose targets want many quiet cores rather than the GPU (the 2-core VM where
# the project is built runs Cassandra, the proxy and the reader on the same two cores).
#
#   jpeg   bench/jpeg.bench.ts --peers none: cassette's decoder against libjpeg-turbo (C, the
#          kit's turbo_loop and libjpeg.so.62) on every group, one thread, and the decode
#          pool's 2 workers vs 1 (issue 24) → $OUT/jpeg.txt
#   read   bench/read.bench.ts from a Cassandra node on this machine, Fashion-MNIST, RTT 0 and
#          150 ms through the project's proxy, cassette's defaults (issue 25: ready order at
#          150 ms keeps ≥ 0.85× its RTT-0 rate over two epochs) → $OUT/read.txt, read.json
#
# With no argument, both. Each bench runs under a time budget (CASSETTE_GPU_JPEG_S, default 150;
# CASSETTE_GPU_READ_S, default 330) so the call ends inside the run tool's 10 minutes with what
# was measured written. CASSETTE_GPU_READ_SAMPLES and CASSETTE_GPU_READ_SETTINGS shrink the read
# bench for a try on the 2-core VM; CASSETTE_GPU_READ_ARGS adds options (e.g. --ramp-start default,8).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/.tmp/gpu-out}
mkdir -p "$OUT"
die() { echo "gpu quiet: $*" >&2; exit 1; }
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
[ -f .gpu/root/env.sh ] || die "no kit: run tools/gpu/unpack.sh with every part first"
# shellcheck disable=SC1091
source .gpu/root/env.sh
what=("$@"); [ ${#what[@]} = 0 ] && what=(jpeg read)
t0=$SECONDS; rc=0
{ nproc; lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|Thread|MHz'; uptime; } > "$OUT/machine.txt" 2>&1
for w in "${what[@]}"; do
  case $w in
    jpeg)
      timeout "${CASSETTE_GPU_JPEG_S:-150}" bun bench/jpeg.bench.ts --peers none > "$OUT/jpeg.txt" 2>&1 || { rc=1; echo "gpu quiet: the jpeg bench failed or ran out of time (see jpeg.txt)" >&2; } ;;
    read)
      if ! bash tools/cassandra/cassandra.sh start > "$OUT/cassandra.txt" 2>&1; then
        cp -r "${CASSETTE_CASSANDRA_RUN:-${TMPDIR:-/tmp}/cassette-cassandra}/node1/logs" "$OUT/cassandra-logs" 2>/dev/null
        die "the Cassandra node did not start (see cassandra.txt)"
      fi
      timeout "${CASSETTE_GPU_READ_S:-330}" bun bench/read.bench.ts --set fmnist --samples "${CASSETTE_GPU_READ_SAMPLES:-120000}" --rounds 2 \
        --settings "${CASSETTE_GPU_READ_SETTINGS:-rtt0,rtt150}" --connections auto ${CASSETTE_GPU_READ_ARGS:-} --json "$OUT/read.json" --out .tmp/gpu-figures > "$OUT/read.txt" 2>&1 \
        || { rc=1; echo "gpu quiet: the read bench failed or ran out of time (see read.txt)" >&2; }
      bash tools/cassandra/cassandra.sh stop > /dev/null 2>&1 ;;
    *) die "unknown benchmark $w: jpeg or read" ;;
  esac
  echo "gpu quiet: $w done at $((SECONDS - t0)) s"
done
exit $rc
