#!/usr/bin/env bash
# cassette set-up: everything a fresh Debian 12 (bookworm) machine needs to build, test and
# train. Idempotent: each step says what it does and skips what is already there.
#
#   bash tools/setup.sh            # system packages, npm ci, Cassandra jars, build
#   SKIP_APT=1 bash tools/setup.sh # only the project's own steps (no root needed)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${CASSETTE_CACHE:-$HOME/.cache/cassette}
t0=$SECONDS
step() { printf '\n==> %s\n' "$*"; }
took() { printf '    (%ds)\n' $((SECONDS - $1)); }
die() { printf 'setup: %s\n' "$*" >&2; exit 1; }

# --- system packages -------------------------------------------------------------------------
# mesa-vulkan-drivers comes from bookworm-backports: bookworm's own Mesa 22 lacks features Dawn
# requires ("shaderUniform*ArrayDynamicIndexing required"); Mesa 25's lavapipe has them.
# gcc and libjpeg62-turbo-dev: libjpeg-turbo's C library, for the JPEG bench's peer
# (bench/jpeg/turbo_loop.c) and the CMYK/YCCK encoder of the decoder tests (cmyk_encode.c).
# chromium: the headless browser that the dashboard's tests open the page in
# (test/_support/browser.ts drives it over the DevTools protocol; no driver package needed).
APT_PKGS=(nginx dataset-fashion-mnist libjpeg-turbo-progs imagemagick python3-png gcc libc6-dev libjpeg62-turbo-dev openjdk-17-jdk-headless maven ca-certificates xz-utils chromium)
BACKPORTS_PKGS=(mesa-vulkan-drivers libvulkan1)
if [ "${SKIP_APT:-0}" != 1 ]; then
  step "system packages (apt)"; s=$SECONDS
  [ "$(id -u)" = 0 ] || die "cannot install system packages as $(id -un): run as root, or set SKIP_APT=1 if they are installed"
  command -v apt-get >/dev/null || die "cannot install system packages: apt-get not found (cassette's set-up supports Debian 12)"
  . /etc/os-release
  [ "${VERSION_CODENAME:-}" = bookworm ] || echo "    warning: tested on Debian bookworm, this is ${PRETTY_NAME:-unknown}"
  BP=/etc/apt/sources.list.d/cassette-backports.sources
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "    adding bookworm-backports to apt sources ($BP)"
    cat > "$BP" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    NEED_UPDATE=1
  fi
  missing=()
  for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  mesa_ver=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
  case "$mesa_ver" in 2[3-9].*|[3-9]*) ;; *) missing_bp=1 ;; esac
  if [ ${#missing[@]} -gt 0 ] || [ "${missing_bp:-0}" = 1 ]; then
    if [ "${NEED_UPDATE:-0}" = 1 ] || [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v lock)" ] || ! apt-cache policy mesa-vulkan-drivers 2>/dev/null | grep -q backports; then
      echo "    apt-get update"
      apt-get update -q >/dev/null || die "apt-get update failed: no network to Debian's mirrors?"
    fi
    if [ ${#missing[@]} -gt 0 ]; then
      echo "    installing: ${missing[*]}"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
        || die "apt-get install ${missing[*]} failed"
    fi
    if [ "${missing_bp:-0}" = 1 ]; then
      echo "    installing from bookworm-backports: ${BACKPORTS_PKGS[*]} (Mesa 25 lavapipe)"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -t bookworm-backports "${BACKPORTS_PKGS[@]}" >/dev/null \
        || die "apt-get install -t bookworm-backports ${BACKPORTS_PKGS[*]} failed"
    fi
  else
    echo "    all present: ${APT_PKGS[*]} ${BACKPORTS_PKGS[*]} (mesa $mesa_ver)"
  fi
  # nginx is started by tests on their own ports with their own config: the distribution's
  # service on port 80 is not needed.
  took $s
fi

# --- npm packages (pinned by package-lock.json) ------------------------------------------------
step "npm packages (npm ci)"; s=$SECONDS
command -v npm >/dev/null || die "npm not found: install Node.js 20 or later"
cd "$ROOT"
stamp=node_modules/.cassette-lock
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp" && [ -x node_modules/.bin/bun ] && [ -x node_modules/.bin/deno ]; then
  echo "    node_modules matches package-lock.json"
else
  npm ci --no-audit --no-fund --loglevel=error || die "npm ci failed: no network to the npm registry?"
  cp package-lock.json "$stamp"
fi
took $s

# --- bun and deno as commands ------------------------------------------------------------------
# The README's commands (`deno task bench`, `bun run train.ts`) name bare `bun` and `deno`: the
# pinned binaries npm installed. Every run, since npm ci undoes the first fix.
step "bun and deno commands (pinned: node_modules/bun, node_modules/deno)"; s=$SECONDS
# deno task runs every node_modules/.bin entry as a JavaScript file, so with deno's postinstall
# link to its ELF binary there, each task's `deno run …` died on "Invalid or unexpected token"
# (https://github.com/denoland/deno/issues/27114). npm's own shim, bin.cjs, is JavaScript that
# spawns the binary: tasks work, and `node_modules/.bin/deno` from a shell still does.
if [ "$(readlink node_modules/.bin/deno || true)" = ../deno/bin.cjs ]; then
  echo "    node_modules/.bin/deno is npm's shim (bin.cjs), as deno task needs"
else
  ln -sfn ../deno/bin.cjs node_modules/.bin/deno
  echo "    node_modules/.bin/deno → ../deno/bin.cjs (deno task runs .bin entries as JavaScript: denoland/deno#27114)"
fi
# One folder with both commands under their own names (bun's is bin/bun.exe), for PATH.
PINNED_BIN="$ROOT/node_modules/.cassette-bin"
mkdir -p "$PINNED_BIN"
ln -sfn "$ROOT/node_modules/bun/bin/bun.exe" "$PINNED_BIN/bun"
ln -sfn "$ROOT/node_modules/deno/deno" "$PINNED_BIN/deno"
need_path=0
for name in bun deno; do
  target=$(readlink "$PINNED_BIN/$name")
  [ -x "$target" ] || die "cannot link $name: $target is missing (npm ci did not install it?)"
  link=/usr/local/bin/$name
  if [ "$(id -u)" != 0 ] || [ ! -w /usr/local/bin ]; then
    need_path=1
  elif [ -L "$link" ] && [ "$(readlink "$link")" = "$target" ]; then
    echo "    $link → $target (already)"
  elif [ -e "$link" ] || [ -L "$link" ]; then
    # Someone else's bun or deno (another install, another checkout): never replaced.
    echo "    $link exists and is not this checkout's ($(readlink -f "$link" 2>/dev/null || echo "$link")): left alone"
    need_path=1
  else
    ln -s "$target" "$link"
    echo "    $link → $target"
  fi
done
case ":$PATH:" in *:/usr/local/bin:*) ;; *) need_path=1 ;; esac
if [ "$need_path" = 1 ]; then
  echo "    for the pinned bun and deno as commands, in each shell (or in ~/.profile):"
  echo "      export PATH=\"$PINNED_BIN:\$PATH\""
else
  for name in bun deno; do
    found=$(command -v "$name" || true)
    [ "$(readlink -f "$found")" = "$(readlink -f "$PINNED_BIN/$name")" ] \
      || echo "    warning: '$name' on this PATH is $found, which comes before /usr/local/bin"
  done
fi
took $s

# --- Apache Cassandra from Maven Central -------------------------------------------------------
step "Apache Cassandra jars (maven, into $CACHE/cassandra)"; s=$SECONDS
bash "$ROOT/tools/cassandra/cassandra.sh" fetch
took $s

# --- an S3-compatible server, built from source ----------------------------------------------
step "versitygw (S3 server for the tests, from the Go module proxy, into $CACHE/versitygw)"; s=$SECONDS
bash "$ROOT/tools/s3/versitygw.sh" build
took $s

# --- the Python webdataset package, pinned (the WebDataset interop test reads our shards with it)
step "webdataset for Python (PyPI, pinned, into $CACHE/wds-venv)"; s=$SECONDS
bash "$ROOT/tools/python/webdataset.sh"
took $s

# --- build ------------------------------------------------------------------------------------
step "build (wasm + bundle)"; s=$SECONDS
node_modules/.bin/bun build.ts
took $s
printf '\nset-up done in %ds\n' $((SECONDS - t0))
