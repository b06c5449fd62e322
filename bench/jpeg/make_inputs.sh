#!/usr/bin/env bash
# Inputs of bench/jpeg.bench.ts, made from real photos with Debian's libjpeg-turbo-progs, into
# bench/jpeg/data/ (gitignored). Idempotent: does nothing when the inputs are there.
#
#   crops/        200 × 224×224 q90 4:2:0 crops (jpegtran -crop on a 16-pixel grid, lossless,
#                 then djpeg | cjpeg -quality 90) of five photos
#   large/        the three 2560×1600 wallpaper photos and one 5120×1600 (8.2 Mpx) made of two
#                 side by side, cjpeg -quality 90 -sample 2x2
#   progressive/  the three 2560×1600 photos, cjpeg -quality 90 -progressive
#   gray/         the three 2560×1600 photos, cjpeg -quality 90 -grayscale
#   photos/       five photos of ImageNet's size, q90 4:2:0: china and flower (640×427) and the
#                 three wallpapers at 1/4 (640×400, djpeg -scale 1/4), for bench/jpeg_region.bench.ts
#   photos500/    the same five cut to 500×375 (jpegtran -crop, lossless), for bench/gpu_decode.bench.ts
#
# Photos: python3-sklearn's china.jpg and flower.jpg (640×427), plasma-workspace-wallpapers'
# Autumn, BytheWater and ColorfulCups (2560×1600), fetched with `apt-get download` into the
# cache by test/fixtures/jpeg/make.sh --bench.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${CASSETTE_CACHE:-$HOME/.cache/cassette}/jpeg-sources
OUT="$HERE/data"
[ -f "$OUT/.done" ] && [ -f "$OUT/photos/.done" ] && [ -f "$OUT/photos500/.done" ] && exit 0
bash "$ROOT/test/fixtures/jpeg/make.sh" --bench >/dev/null
if [ ! -f "$OUT/photos/.done" ]; then
  mkdir -p "$OUT/photos"
  for p in china flower; do djpeg -pnm "$CACHE/$p.jpg" | cjpeg -quality 90 -sample 2x2 > "$OUT/photos/$p.jpg"; done
  for w in Autumn BytheWater ColorfulCups; do djpeg -pnm -scale 1/4 "$CACHE/$w.jpg" | cjpeg -quality 90 -sample 2x2 > "$OUT/photos/$w.jpg"; done
  touch "$OUT/photos/.done"
fi
if [ ! -f "$OUT/photos500/.done" ]; then
  mkdir -p "$OUT/photos500"
  for f in "$OUT"/photos/*.jpg; do jpegtran -crop 500x375+0+0 -outfile "$OUT/photos500/$(basename "$f")" "$f"; done
  touch "$OUT/photos500/.done"
fi
[ -f "$OUT/.done" ] && exit 0
rm -rf "$OUT"/{crops,large,progressive,gray}; mkdir -p "$OUT"/{crops,large,progressive,gray}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
WALLS=(Autumn BytheWater ColorfulCups)
for w in "${WALLS[@]}"; do djpeg -pnm "$CACHE/$w.jpg" > "$T/$w.ppm"; done

# 200 crops: 40 from each photo, at seeded positions on a 16-pixel grid.
i=0
RANDOM=5
for p in china flower "${WALLS[@]}"; do
  case $p in china|flower) W=640; H=427 ;; *) W=2560; H=1600 ;; esac
  for k in $(seq 40); do
    x=$(( (RANDOM % ((W - 224) / 16)) * 16 )); y=$(( (RANDOM % ((H - 224) / 16)) * 16 ))
    jpegtran -crop "224x224+$x+$y" "$CACHE/$p.jpg" | djpeg -pnm | cjpeg -quality 90 -sample 2x2 > "$OUT/crops/$(printf %03d $i)_$p.jpg"
    i=$((i + 1))
  done
done

for w in "${WALLS[@]}"; do
  cjpeg -quality 90 -sample 2x2 "$T/$w.ppm" > "$OUT/large/$w.jpg"
  cjpeg -quality 90 -sample 2x2 -progressive "$T/$w.ppm" > "$OUT/progressive/$w.jpg"
  cjpeg -quality 90 -grayscale "$T/$w.ppm" > "$OUT/gray/$w.jpg"
done
# 8.2 Mpx: two photos side by side (PPM rows joined).
"$ROOT/node_modules/.bin/node" -e '
  const fs = require("fs");
  const read = (p) => { const b = fs.readFileSync(p); let s = 0, n = 0; while (n < 3) if (b[s++] === 10) n++; return b.subarray(s); };
  const [a, b, out] = process.argv.slice(1);
  const A = read(a), B = read(b), row = 2560 * 3;
  const o = Buffer.alloc(2 * A.length);
  for (let y = 0; y < 1600; y++) { A.copy(o, 2 * y * row, y * row, (y + 1) * row); B.copy(o, (2 * y + 1) * row, y * row, (y + 1) * row); }
  fs.writeFileSync(out, Buffer.concat([Buffer.from("P6\n5120 1600\n255\n"), o]));
' "$T/Autumn.ppm" "$T/ColorfulCups.ppm" "$T/wide.ppm"
cjpeg -quality 90 -sample 2x2 "$T/wide.ppm" > "$OUT/large/Autumn+ColorfulCups_5120x1600.jpg"
touch "$OUT/.done"
du -sh "$OUT"/*
