#!/usr/bin/env bash
# The read benchmark's ImageNet-like set: N (default 1500) JPEGs of 500×375, ~110 kB, from two
# real photographs (china.jpg and flower.jpg, 640×427, from Debian's python3-sklearn 1.2.1, the
# same sources as test/fixtures/jpeg/make.sh), cropped, scaled and mirrored by
# make_imagenet_like.ts and encoded by libjpeg-turbo's cjpeg (Debian libjpeg-turbo-progs).
#
#   bash bench/read/make_imagenet_like.sh [N] [OUT]     # OUT: $CASSETTE_CACHE/imagenet-like by default
#
# The files are not committed (~165 MB): the same command makes the same files (seeded).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${CASSETTE_CACHE:-$HOME/.cache/cassette}
N=${1:-1500}
OUT=${2:-$CACHE/imagenet-like}
for t in cjpeg djpeg; do command -v $t >/dev/null || { echo "make_imagenet_like.sh: $t not found (apt-get install libjpeg-turbo-progs)" >&2; exit 1; }; done

SRC=$CACHE/jpeg-sources
mkdir -p "$SRC"
fetch() { bash "$HERE/../../tools/fetch_deb_file.sh" "$1" "$2" "$SRC/$3"; }
fetch python3-sklearn usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg china.jpg
fetch python3-sklearn usr/lib/python3/dist-packages/sklearn/datasets/images/flower.jpg flower.jpg

S=$(mktemp -d)
trap 'rm -rf "$S"' EXIT
djpeg -pnm "$SRC/china.jpg" > "$S/china.ppm"
djpeg -pnm "$SRC/flower.jpg" > "$S/flower.ppm"
rm -rf "$OUT"
"$ROOT/node_modules/.bin/bun" "$HERE/make_imagenet_like.ts" --sources "$S/china.ppm,$S/flower.ppm" --out "$OUT" --n "$N" --seed 1
