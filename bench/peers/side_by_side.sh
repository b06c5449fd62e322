#!/usr/bin/env bash
# cassette read vs the PyTorch peers on the same store and dataset, interleaved round by round,
# so that a slow minute of the shared machine falls on every contender alike.
#
#   bash bench/peers/side_by_side.sh STORE DATASET [ROUNDS] [BATCH]
#   e.g. bash bench/peers/side_by_side.sh cassandra://127.0.0.1:9042/cassette_peers_bench fm 2
#
# The dataset must be in the store already (cassette ingest); for a latency, give the address
# of the project's TCP proxy in front of the node (tools/proxy) as STORE. Builds the peers'
# environment first if it is absent (bench/peers/env.sh). Prints one JSON line per run (with
# "contender", "round" and the process's wall/user/sys seconds from /usr/bin/time added), then
# a table of medians. Fashion-MNIST only for now (the peers' fm tensor; cassette decodes).
set -euo pipefail

store="${1:?usage: side_by_side.sh STORE DATASET [ROUNDS] [BATCH]}"
dataset="${2:?usage: side_by_side.sh STORE DATASET [ROUNDS] [BATCH]}"
rounds="${3:-2}"
batch="${4:-128}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

bash bench/peers/env.sh >&2
py="$(bash bench/peers/env.sh --check)"
bun="node_modules/.bin/bun"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# name | command. cassette in its default (reads in the loader's thread, decodes as samples
# arrive) and with two read workers, as the peers have two worker processes on two cores.
contenders=(
  "cassette|$bun src/cli/main.ts read --store $store --dataset $dataset --decode --batch $batch --json"
  "cassette-workers2|$bun src/cli/main.ts read --store $store --dataset $dataset --decode --workers 2 --batch $batch --json"
  "torch-w2|$py bench/peers/torch_cassandra.py --store $store --dataset $dataset --workers 2 --batch $batch --json"
  "torch-w2-unordered|$py bench/peers/torch_cassandra.py --store $store --dataset $dataset --workers 2 --batch $batch --no-in-order --json"
  "torch-w2-t8|$py bench/peers/torch_cassandra.py --store $store --dataset $dataset --workers 2 --threads 8 --batch $batch --json"
  "torch-w2-t8-unordered|$py bench/peers/torch_cassandra.py --store $store --dataset $dataset --workers 2 --threads 8 --batch $batch --no-in-order --json"
  # The best of a sweep of workers 1-4 × threads 0/8 on 10 000 samples at RTT 0 on 2 cores
  # (2026-11-24): waiting on queries, not the cores, bounds a worker, so 4 beat 2 (1945 vs
  # 1437 samples/s with 8 threads; 1222 vs 998 without).
  "torch-w4-t8-unordered|$py -W ignore bench/peers/torch_cassandra.py --store $store --dataset $dataset --workers 4 --threads 8 --batch $batch --no-in-order --json"
)

for ((r = 1; r <= rounds; r++)); do
  for c in "${contenders[@]}"; do
    name="${c%%|*}" cmd="${c#*|}"
    # shellcheck disable=SC2086  # the command is words on purpose
    /usr/bin/time -f '%e %U %S' -o "$out/time" $cmd > "$out/json" 2> "$out/err" || {
      echo "$name failed:" >&2; cat "$out/err" >&2; exit 1
    }
    read -r wall user sys < "$out/time"
    tail -n 1 "$out/json" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
r.update(contender=sys.argv[1], round=int(sys.argv[2]), processWall=float(sys.argv[3]), processCpu=float(sys.argv[4]) + float(sys.argv[5]))
print(json.dumps(r))' "$name" "$r" "$wall" "$user" "$sys" | tee -a "$out/all.jsonl"
  done
done

python3 - "$out/all.jsonl" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
names = list(dict.fromkeys(r["contender"] for r in runs))
print(f"\n{'contender':24} {'samples':>7} {'samples/s':>10} {'after 1st':>10} {'1st batch ms':>12} {'batch p50 ms':>12} {'batch p99 ms':>12} {'process CPU s':>13} {'process wall s':>14}")
for n in names:
    rs = [r for r in runs if r["contender"] == n]
    m = lambda f: statistics.median(f(r) for r in rs)
    peer = "firstBatchMs" in rs[0]
    steady = f"{m(lambda r: r['steadySamplesPerSec']):10.0f}" if peer else f"{'-':>10}"
    first = f"{m(lambda r: r['firstBatchMs']):12.1f}" if peer else f"{'-':>12}"
    print(f"{n:24} {rs[0]['samples']:7d} {m(lambda r: r['samplesPerSec']):10.0f} {steady} {first} {m(lambda r: r['batchMs']['p50']):12.1f} "
          f"{m(lambda r: r['batchMs']['p99']):12.1f} {m(lambda r: r['processCpu']):13.2f} {m(lambda r: r['processWall']):14.2f}")
print(f"(medians of {len(runs) // len(names)} interleaved rounds; samples/s as each reports it: cassette's over its batches'")
print(" time with its store already open, a peer's from iter() with its workers' start; 'after 1st': a peer's rate after")
print(" its first batch; process CPU and wall: /usr/bin/time of the whole command, runtime start and imports included)")
EOF
