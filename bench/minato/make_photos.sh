#!/usr/bin/env bash
# Large photos for bench/minato.bench.ts --tail photos, into bench/minato/data/ (gitignored):
# the three 2560×1600 wallpaper photos of bench/jpeg/make_inputs.sh scaled up by ImageMagick to
# 3840×2400 (9.2 Mpx), 4480×2800 (12.5 Mpx) and 4992×3120 (15.6 Mpx), each encoded by cjpeg
# -quality 90 -sample 2x2: nine 8–16 Mpx JPEGs, the tail of the mix (the 224×224 crops of
# bench/jpeg/data/crops are its body). Idempotent: does nothing when they are there.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${CASSETTE_CACHE:-$HOME/.cache/cassette}/jpeg-sources
OUT="$HERE/data"
[ -f "$OUT/.done" ] && exit 0
bash "$ROOT/bench/jpeg/make_inputs.sh" >/dev/null
rm -rf "$OUT"; mkdir -p "$OUT/large"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
for w in Autumn BytheWater ColorfulCups; do
  djpeg -pnm "$CACHE/$w.jpg" > "$T/$w.ppm"
  for size in 3840x2400 4480x2800 4992x3120; do
    convert "$T/$w.ppm" -resize "$size!" "$T/big.ppm"
    cjpeg -quality 90 -sample 2x2 "$T/big.ppm" > "$OUT/large/${w}_$size.jpg"
  done
done
touch "$OUT/.done"
du -sh "$OUT/large"
