#!/usr/bin/env bash
# measure.sh [BENCH-ARGS…]: on the lent GPU machine, once tools/gpu/unpack.sh has installed the kit:
# starts the Cassandra node, checks that train.ts gets the real GPU (not a CPU driver), then runs
# bench/train_io.bench.ts (does the loader keep the GPU fed, with train.ts's defaults?) with
# BENCH-ARGS, then bench/read_workers.bench.ts from the embedded store with 1, 2, 4, 8 and 14
# read workers (do they scale with the cores? NOTE [ Read workers: how many ]) and from
# Cassandra (what the feeding thread pays a sample, packets against sample by sample). Everything lands in $OUT
# (the run tool's folder that comes back; default .tmp/gpu-out): nvidia-smi.txt, probe.json,
# train_io.txt (the tables, printed model by model), read_workers.txt, hybrid.txt (the hybrid
# JPEG decode against the CPU decode, bench/hybrid.bench.ts), gpu_decode.txt (the GPU's Huffman
# decode against both, bench/gpu_decode.bench.ts), augment.txt (the augmented
# preprocessing pass against the plain one, bench/augment.bench.ts), and Cassandra's log if it fails.
#
#   bash tools/gpu/unpack.sh .gpu/part-3.tar && bash tools/gpu/measure.sh --model mlp,cnn --rounds 2 --limit 60000
#
# CASSETTE_GPU_BUDGET_S (default 540) bounds both benchmarks, of which the read benchmark gets
# the last CASSETTE_GPU_READ_S (default 120; 0 skips it), so the call ends inside the run tool's
# 10 minutes with its results still written. Files of an earlier call in $OUT are not kept:
# $OUT comes back empty each call, so each call's results come back with it.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/.tmp/gpu-out}
mkdir -p "$OUT"
die() { echo "gpu measure: $*" >&2; exit 1; }
[ -f .gpu/root/env.sh ] || die "no kit: run tools/gpu/unpack.sh with every part first"
# shellcheck disable=SC1091
source .gpu/root/env.sh
t0=$SECONDS
idx=(); [ -n "${CASSETTE_GPU_IDX:-}" ] && idx=(--idx "$CASSETTE_GPU_IDX")
{ nvidia-smi || echo "(no nvidia-smi)"; } > "$OUT/nvidia-smi.txt" 2>&1
if ! bash tools/cassandra/cassandra.sh start; then
  cp -r "${CASSETTE_CASSANDRA_RUN:-${TMPDIR:-/tmp}/cassette-cassandra}/node1/logs" "$OUT/cassandra-logs" 2>/dev/null
  die "the Cassandra node did not start (logs in $OUT/cassandra-logs)"
fi
# One short epoch on pixels held on the GPU: which adapter, and how fast without I/O.
bun train.ts --no-io --model cnn --epochs 1 --limit 8192 "${idx[@]}" --json --out .tmp/gpu-probe > "$OUT/probe.json" 2> "$OUT/probe.log" \
  || die "train.ts --no-io failed (see $OUT/probe.log)"
grep -q '"cpu":false' "$OUT/probe.json" || echo "gpu measure: warning: train.ts ran on a CPU adapter (see device in $OUT/probe.json)" >&2
read_s=${CASSETTE_GPU_READ_S:-120}
hybrid_s=${CASSETTE_GPU_HYBRID_S:-60}
# The hybrid JPEG decode (issue 37): photos to a 224² tensor with the IDCT on the CPU or the GPU,
# images/s and CPU seconds per 1 000 images (needs bench/jpeg/data in the kit; 0 skips it).
if [ "$hybrid_s" -gt 0 ] && [ -f bench/jpeg/data/.done ]; then
  timeout "$hybrid_s" bun bench/hybrid.bench.ts --quick --copies 100 > "$OUT/hybrid.txt" 2>&1 \
    || echo "gpu measure: the hybrid benchmark failed or ran out of its ${hybrid_s} s (see $OUT/hybrid.txt)" >&2
fi
# The GPU JPEG decode (issue 42): a batch of 256 photos of 500×375, Huffman decode on the GPU
# against the hybrid and CPU decodes, and its passes timed (target ≥ 5 000 images/s, ≤ 0.1 core
# per 1 000 images/s); 0 skips it.
gpu_decode_s=${CASSETTE_GPU_DECODE_S:-60}
if [ "$gpu_decode_s" -gt 0 ] && [ -f bench/jpeg/data/photos500/.done ]; then
  timeout "$gpu_decode_s" bun bench/gpu_decode.bench.ts --batch 256 > "$OUT/gpu_decode.txt" 2>&1 \
    || echo "gpu measure: the GPU decode benchmark failed or ran out of its ${gpu_decode_s} s (see $OUT/gpu_decode.txt)" >&2
fi
# The augmented pass (issue 41): a full policy's pass against the plain one, a batch of 64 photos'
# sizes to 224² (target ≥ 0.8×); 0 skips it.
augment_s=${CASSETTE_GPU_AUGMENT_S:-45}
if [ "$augment_s" -gt 0 ]; then
  timeout "$augment_s" bun bench/augment.bench.ts --batch 64 --rounds 5 > "$OUT/augment.txt" 2>&1 \
    || echo "gpu measure: the augment benchmark failed or ran out of its ${augment_s} s (see $OUT/augment.txt)" >&2
fi
budget=$(( ${CASSETTE_GPU_BUDGET_S:-540} - read_s - (SECONDS - t0) ))
timeout "$budget" bun bench/train_io.bench.ts "${idx[@]}" "$@" > "$OUT/train_io.txt" 2>&1
rc=$?
[ $rc = 124 ] && echo "gpu measure: the benchmark ran out of its ${budget} s (the models done are in $OUT/train_io.txt)" >&2
if [ "$read_s" -gt 0 ]; then
  timeout $(( read_s * 2 / 3 )) bun bench/read_workers.bench.ts --workers 1,2,4,8,14 --rounds 2 --samples 60000 --grey "${idx[@]}" \
    > "$OUT/read_workers_scaling.txt" 2>&1 \
    || echo "gpu measure: the scaling benchmark failed or ran out of time (see $OUT/read_workers_scaling.txt)" >&2
  timeout $(( read_s / 3 )) bun bench/read_workers.bench.ts --store "cassandra://127.0.0.1:9042/cassette_bench?connections=4" \
    --workers 4 --per-sample --rounds 2 --samples 20000 --grey "${idx[@]}" > "$OUT/read_workers.txt" 2>&1 \
    || echo "gpu measure: the read benchmark failed or ran out of its time (see $OUT/read_workers.txt)" >&2
fi
bash tools/cassandra/cassandra.sh stop >/dev/null 2>&1
echo "gpu measure: done in $((SECONDS - t0)) s, exit $rc; results in $OUT"
exit $rc
