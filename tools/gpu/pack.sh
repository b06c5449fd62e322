#!/usr/bin/env bash
# pack.sh [--fresh]: packs what a benchmark on the lent GPU machine needs into parts small enough
# to travel with one `run` call each (a run carries at most 64 MiB, working tree included).
#
# That machine has no Bun, no Java and no network. The kit brings: Bun (xz), the few npm packages
# the Bun path imports, the built WASM decoder, a jlink'ed Java 17 runtime, the Cassandra jars,
# Debian's Fashion-MNIST files, libvulkan1 and glvnd's libraries. Each part is a plain tar of already compressed
# files plus MANIFEST (every file of the kit and its size), so the parts can arrive in any order
# and tools/gpu/unpack.sh knows when it has them all.
#
#   bash tools/gpu/pack.sh            → .gpu/part-1.tar … .gpu/part-N.tar (lists the run calls)
#   CASSETTE_GPU_PART_MB=50 …         the size cap of a part (default 58 MB: with the ~6 MB working tree, under 64 MiB)
#
# Slow steps (xz of Bun, jlink) are skipped when their output exists; --fresh redoes them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=.gpu
STAGE=$OUT/stage
CAP=$(( ${CASSETTE_GPU_PART_MB:-58} * 1000 * 1000 ))
FMNIST=/usr/share/datasets/fashion-mnist
JDK=$(ls -d /usr/lib/jvm/java-17-openjdk-* 2>/dev/null | head -n1 || true)
# The npm packages `bun train.ts` and the benchmarks import on the Bun path (runtime-adapters/bun.ts,
# src/dataset/ingest.ts, the Cassandra store), with their own dependencies.
NPM=(bun-webgpu bun-webgpu-linux-x64 @webgpu/types cassandra-driver adm-zip long undici jpeg-js)

die() { echo "gpu pack: $*" >&2; exit 1; }
[ "${1:-}" = --fresh ] && rm -rf "$STAGE"
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }

[ -x node_modules/.bin/bun ] || die "node_modules/.bin/bun missing: run npm ci (bash tools/setup.sh)"
[ -f wasm/build/jpeg.wasm ] || die "wasm/build/jpeg.wasm missing: run node_modules/.bin/bun build.ts"
# The jars where cassandra.sh keeps them ($CASSETTE_CACHE/cassandra/VERSION/lib), fetched if absent.
CASS_LIB=$(bash tools/cassandra/cassandra.sh lib) || die "cannot fetch the Cassandra jars"
CASS_VERSION=$(basename "$(dirname "$CASS_LIB")")
[ -f "$FMNIST/train-images-idx3-ubyte.gz" ] || die "Fashion-MNIST missing in $FMNIST: run bash tools/setup.sh"
[ -n "$JDK" ] && [ -x "$JDK/bin/jlink" ] || die "no Java 17 JDK with jlink under /usr/lib/jvm (openjdk-17-jdk-headless)"
for p in "${NPM[@]}"; do [ -d "node_modules/$p" ] || die "node_modules/$p missing: run npm ci"; done
mkdir -p "$STAGE"/{fmnist,vulkan} "$STAGE/cassandra/$CASS_VERSION/lib"

step() { printf '    %-34s' "$1"; }
if [ ! -s "$STAGE/bun.xz" ]; then
  step "Bun $(node_modules/.bin/bun --version) (xz)"
  xz -T0 -6 -c "$(readlink -f node_modules/.bin/bun)" > "$STAGE/bun.xz.part" && mv "$STAGE/bun.xz.part" "$STAGE/bun.xz"
  echo "$(du -h "$STAGE/bun.xz" | cut -f1)"
fi
step "npm packages + wasm/build (xz)"
tar -cf - "${NPM[@]/#/node_modules/}" wasm/build | xz -T0 -6 > "$STAGE/app.tar.xz"
echo "$(du -h "$STAGE/app.tar.xz" | cut -f1)"
if [ ! -s "$STAGE/jre.tar.xz" ]; then
  step "Java runtime (jlink, xz)"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  # java.se and the jdk.* modules Cassandra's start-up flags name (tools/cassandra/cassandra.sh).
  "$JDK/bin/jlink" --add-modules java.se,jdk.unsupported,jdk.management,jdk.management.agent,jdk.crypto.ec,jdk.zipfs,jdk.naming.dns,jdk.attach,jdk.jfr \
    --strip-debug --no-man-pages --no-header-files --output "$tmp/jre"
  tar -C "$tmp" -cf - jre | xz -T0 -6 > "$STAGE/jre.tar.xz"
  echo "$(du -h "$STAGE/jre.tar.xz" | cut -f1)"
fi
# bench/jpeg.bench.ts's inputs (the machine has no ImageMagick or cjpeg to make them; its
# Fashion-MNIST files it makes itself from the kit's dataset), the C loop that times
# libjpeg-turbo, and Debian's libjpeg.so.62 that loop links (unpack.sh puts it on the library path).
if [ -f bench/jpeg/data/.done ]; then
  [ -x bench/jpeg/build/turbo_loop ] || cc -O2 -o bench/jpeg/build/turbo_loop bench/jpeg/turbo_loop.c -ljpeg || die "cannot build bench/jpeg/build/turbo_loop (libjpeg62-turbo-dev?)"
  step "JPEG bench inputs + turbo_loop"
  libjpeg=$(readlink -f /lib/x86_64-linux-gnu/libjpeg.so.62)
  tar -cf "$STAGE/jpeg.tar" --exclude=bench/jpeg/data/fmnist bench/jpeg/data bench/jpeg/build/turbo_loop \
    --transform "s|^${libjpeg#/}\$|lib/libjpeg.so.62|" "$libjpeg"
  echo "$(du -h "$STAGE/jpeg.tar" | cut -f1)"
else
  echo "    (no bench/jpeg/data: run bash bench/jpeg/make_inputs.sh to carry the JPEG bench; left out)"
  rm -f "$STAGE/jpeg.tar"
fi
cp -u "$CASS_LIB"/*.jar "$STAGE/cassandra/$CASS_VERSION/lib/"
cp -u "$FMNIST"/*.gz "$STAGE/fmnist/"
# libvulkan1 is the loader. The NVIDIA ICD (libGLX_nvidia.so.0) needs glvnd's libGLdispatch:
# without these the loader finds the ICD but "Could not get 'vkCreateInstance'" (seen on the
# first H100 run, 2026-11-24), and Dawn falls back to its null backend.
VK_DEBS=(libvulkan1 libglvnd0 libglx0 libgl1 libegl1 libopengl0 libgles2)
for d in "${VK_DEBS[@]}"; do
  ls "$STAGE"/vulkan/"${d}"_*.deb >/dev/null 2>&1 && continue
  (cd "$STAGE/vulkan" && apt-get download "$d" >/dev/null 2>&1) || die "apt-get download $d failed (apt-get update?)"
done

# MANIFEST: every file of the kit, with its size; then first-fit-decreasing into parts.
(cd "$STAGE" && find . -type f ! -name MANIFEST ! -name '*.part' -printf '%s %P\n' | sort -k2) > "$STAGE/MANIFEST"
rm -f "$OUT"/part-*.tar
python3 - "$STAGE" "$OUT" "$CAP" <<'PY'
import os, subprocess, sys
stage, out, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
files = [(int(s), p) for s, p in (l.split(" ", 1) for l in open(os.path.join(stage, "MANIFEST")).read().splitlines())]
bins = []
for size, path in sorted(files, reverse=True):
    if size > cap:
        sys.exit(f"gpu pack: {path} is {size / 1e6:.1f} MB, more than a part may hold ({cap / 1e6:.0f} MB)")
    b = next((b for b in bins if b[0] + size <= cap), None)
    if b is None:
        b = [0, []]; bins.append(b)
    b[0] += size; b[1].append(path)
for i, (size, paths) in enumerate(bins, 1):
    subprocess.run(["tar", "-C", stage, "-cf", os.path.join(out, f"part-{i}.tar"), "MANIFEST", *sorted(paths)], check=True)
    print(f"    part-{i}.tar  {size / 1e6:5.1f} MB  {len(paths)} files")
PY
n=$(ls "$OUT"/part-*.tar | wc -l)
cat <<EOF
Kit ready: $n parts. On the GPU machine, one \`run\` call per part, back to back (a warm machine
keeps ignored folders such as .gpu/root between calls, and goes back after ~30 s idle):
EOF
for i in $(seq 1 "$n"); do echo "  run carry=[\".gpu/part-$i.tar\"]  command: bash tools/gpu/unpack.sh .gpu/part-$i.tar"; done
echo "  then, in the call of the last part or after it: source .gpu/root/env.sh && bash tools/cassandra/cassandra.sh start && bun …"
