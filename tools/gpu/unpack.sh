#!/usr/bin/env bash
# unpack.sh PART.tar…: on the lent GPU machine, adds parts made by tools/gpu/pack.sh to the kit in
# .gpu/root (an ignored folder, so a warm machine keeps it between run calls). Once every file of
# MANIFEST is there, installs the kit and writes .gpu/root/env.sh; until then it says what is
# missing and exits 0, so each part can go with its own call.
#
#   bash tools/gpu/unpack.sh .gpu/part-1.tar
#   source .gpu/root/env.sh        Bun on PATH (and node_modules/.bin/bun), JAVA_HOME, the
#                                  Cassandra jars (CASSETTE_CACHE), the Vulkan loader
#
# It also copies Fashion-MNIST to /usr/share/datasets/fashion-mnist, where train.ts reads it by
# default (CASSETTE_GPU_FMNIST_DIR overrides the target). Where that is not writable it stays in
# the kit, and env.sh names it in CASSETTE_GPU_IDX, which measure.sh passes on as --idx.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KIT=${CASSETTE_GPU_ROOT:-$ROOT/.gpu/root}
FMNIST=${CASSETTE_GPU_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}
DEFAULT_FMNIST=/usr/share/datasets/fashion-mnist
FILES=$KIT/files
die() { echo "gpu unpack: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: unpack.sh PART.tar… (parts from tools/gpu/pack.sh)"
[ "$1" = -h ] || [ "$1" = --help ] && { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }

mkdir -p "$FILES"
for part in "$@"; do
  [ -f "$part" ] || die "no part at $part (was it in the call's carry list?)"
  tar -C "$FILES" -xf "$part" || die "cannot extract $part: is it a part made by tools/gpu/pack.sh?"
  echo "unpacked $part"
done
[ -f "$FILES/MANIFEST" ] || die "no MANIFEST in $FILES: the parts are not from tools/gpu/pack.sh"
total=0; missing=()
while read -r size path; do
  total=$((total + 1))
  [ "$(stat -c %s "$FILES/$path" 2>/dev/null || echo -)" = "$size" ] || missing+=("$path")
done < "$FILES/MANIFEST"
if [ ${#missing[@]} -gt 0 ]; then
  echo "kit: $((total - ${#missing[@]})) of $total files here; waiting for the parts holding ${missing[0]}$([ ${#missing[@]} -gt 1 ] && echo " and $(( ${#missing[@]} - 1 )) more")"
  exit 0
fi

t0=$SECONDS
mkdir -p "$KIT/bin" "$ROOT/node_modules/.bin"
xz -dc "$FILES/bun.xz" > "$KIT/bin/bun.part" && chmod +x "$KIT/bin/bun.part" && mv "$KIT/bin/bun.part" "$KIT/bin/bun"
ln -sf "$KIT/bin/bun" "$ROOT/node_modules/.bin/bun"
tar -C "$ROOT" -xJf "$FILES/app.tar.xz"
libjpeg=""
if [ -f "$FILES/jpeg.tar" ]; then
  tar -C "$ROOT" -xf "$FILES/jpeg.tar" --exclude=lib
  mkdir -p "$KIT/lib" && tar -C "$KIT" -xf "$FILES/jpeg.tar" lib && libjpeg=$KIT/lib
fi
rm -rf "$KIT/jre" && tar -C "$KIT" -xJf "$FILES/jre.tar.xz"
# The kit's files already lie as tools/cassandra/cassandra.sh's cache does
# ($CASSETTE_CACHE/cassandra/VERSION/lib), so env.sh points the cache at them: no copy.
for lib in "$FILES"/cassandra/*/lib; do touch "$lib/.complete"; done
if ! { mkdir -p "$FMNIST" && cp -u "$FILES"/fmnist/*.gz "$FMNIST/"; } 2>/dev/null; then
  echo "cannot write Fashion-MNIST to $FMNIST: train.ts will read it from the kit (--idx)"
  FMNIST=$FILES/fmnist
fi
rm -rf "$KIT/vulkan" && for deb in "$FILES"/vulkan/*.deb; do dpkg-deb -x "$deb" "$KIT/vulkan" 2>/dev/null || dpkg -x "$deb" "$KIT/vulkan"; done
vklib=$(dirname "$(find "$KIT/vulkan" -name 'libvulkan.so.1' | head -n1)")
# glvnd's libraries go where the driver's libGLX_nvidia.so.0 finds them, as the device notes
# advise for exactly these packages (the run that worked, 2026-11-24, did this); as root only.
if [ "$(id -u)" = 0 ]; then
  for deb in "$FILES"/vulkan/lib{glvnd0,glx0,gl1,egl1,opengl0,gles2}_*.deb; do [ -f "$deb" ] && dpkg -x "$deb" /; done
  ldconfig
fi

# The NVIDIA driver's Vulkan ICD: the loader finds it in the usual places; if it lies elsewhere,
# name it (the NVIDIA ICD is in /usr/local/nvidia/share/vulkan/icd.d on these machines).
icd=""
for f in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; do
  [ -f "$f" ] && { icd=$f; break; }
done
cat > "$KIT/env.sh" <<EOF
# Written by tools/gpu/unpack.sh: source it before running Bun, Cassandra or the benchmarks.
export PATH="$KIT/bin:$KIT/jre/bin:\$PATH"
export JAVA_HOME="$KIT/jre"
export CASSETTE_CACHE="$FILES"
export LD_LIBRARY_PATH="$vklib${libjpeg:+:$libjpeg}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
${icd:+export VK_DRIVER_FILES="$icd"}
$([ "$FMNIST" != "$DEFAULT_FMNIST" ] && echo "export CASSETTE_GPU_IDX=\"$FMNIST/\"")
EOF
echo "kit installed in $KIT in $((SECONDS - t0)) s: Bun $("$KIT/bin/bun" --version), $("$KIT/jre/bin/java" -version 2>&1 | head -n1), Vulkan ICD ${icd:-(none found: the loader searches its defaults)}"
echo "next: source $KIT/env.sh"
