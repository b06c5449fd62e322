#!/usr/bin/env bash
# `cassette read --epochs 2` of two checkouts, alternating round by round, at RTT 0 and 150 ms
# through the project's proxy (tools/proxy), from the local node's Fashion-MNIST (keyspace
# cassette_bench, dataset fashion-mnist: `cassette ingest idx:/usr/share/datasets/fashion-mnist/
# --store cassandra://127.0.0.1:9042/cassette_bench --dataset fashion-mnist`). What a user types,
# listing and start-up included: per run the samples/s the command reports, the time to the
# first 10 000 samples, each epoch's time, and the wall time; then medians per checkout.
#
#   bash bench/read/cli_ab.sh BEFORE_DIR [ROUNDS]     (BEFORE_DIR: e.g. git worktree add /tmp/before HEAD~3)
set -euo pipefail
before=${1:?usage: bash bench/read/cli_ab.sh BEFORE_DIR [ROUNDS]}
rounds=${2:-4}
here=$(cd "$(dirname "$0")/../.." && pwd)
bun="$here/node_modules/.bin/bun"
out=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$out"' EXIT
for d in 0 75; do
  "$bun" "$here/tools/proxy/main.ts" --target 127.0.0.1:9042 --listen 127.0.0.1:0 --delay-ms $d --json > "$out/proxy$d" &
  pids+=($!)
done
port() { for _ in $(seq 100); do p=$(grep -o '"listening": *[0-9]*' "$out/proxy$1" | grep -o '[0-9]*$' || true); [ -n "$p" ] && { echo "$p"; return; }; sleep 0.1; done; echo "proxy did not start" >&2; exit 1; }
p0=$(port 0); p150=$(port 75)
for i in $(seq "$rounds"); do
  for tree in "$before" "$here"; do
    for rtt in 0 150; do
      p=$([ $rtt = 0 ] && echo "$p0" || echo "$p150")
      s=$(date +%s.%N)
      (cd "$tree" && "$bun" src/cli/main.ts read --store "cassandra://127.0.0.1:$p/cassette_bench" --dataset fashion-mnist --epochs 2 --json --series 2>/dev/null | tail -1) > "$out/run.json"
      e=$(date +%s.%N)
      python3 - "$out/run.json" "$i" "$([ "$tree" = "$here" ] && echo after || echo before)" "$rtt" "$s" "$e" >> "$out/rows" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); s = d["batchAtMs"]; per = d["samples"] / 2
done, first_epoch, to10k = 0, None, None
for t in s:
    done += 128
    if to10k is None and done >= 10000: to10k = t
    if first_epoch is None and done >= per: first_epoch = t
print(sys.argv[2], sys.argv[3], sys.argv[4], round(d["samplesPerSec"]), round(to10k), round(first_epoch), round(s[-1] - first_epoch), round(float(sys.argv[6]) - float(sys.argv[5]), 2))
PY
      tail -1 "$out/rows" | awk '{printf "round %s %-6s RTT %3s ms: %6d samples/s, first 10k %5d ms, epochs %5d + %5d ms, wall %s s\n", $1, $2, $3, $4, $5, $6, $7, $8}'
    done
  done
done
python3 - "$out/rows" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
print("\nmedians (per-round ratio 150 ÷ RTT 0, range)")
for who in ("before", "after"):
    get = lambda rtt, k: [float(r[k]) for r in rows if r[1] == who and r[2] == rtt]
    ratios = [b / a for a, b in zip(get("0", 3), get("150", 3))]
    print(f"  {who:6} RTT 0 {st.median(get('0', 3)):7.0f}/s  150 ms {st.median(get('150', 3)):7.0f}/s  ratio {st.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
          f"  at 150 ms: first 10k {st.median(get('150', 4)) / 1000:.2f} s, epochs {st.median(get('150', 5)) / 1000:.2f} + {st.median(get('150', 6)) / 1000:.2f} s, wall {st.median(get('150', 7)):.1f} s")
PY
