#!/usr/bin/env bash
# Builds the Python peers' virtualenv once, from PyPI: requirements.txt's packages, every
# dependency held at constraints.txt's version.
#
#   bash bench/peers/env.sh           build it if absent; print where it is and how long it took
#   bash bench/peers/env.sh --check   exit 0 and print its python if it is built, 1 if not
#   bash bench/peers/env.sh --path    print the python it would use (built or not)
#
# The benches call it; the test command never does (it only asks --check). A build that
# stops half way leaves no `.complete` marker, so the next call starts it again from scratch.
# Where: ${CASSETTE_CACHE:-$HOME/.cache/cassette}/peers-venv. Python: $PYTHON or python3 (3.11).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${CASSETTE_CACHE:-$HOME/.cache/cassette}/peers-venv"
marker="$venv/.complete"
py="$venv/bin/python"

# The venv keeps copies of the pin files it was built from; other pins mean build again.
same_pins() {
  cmp -s "$here/requirements.txt" "$venv/requirements.txt" && cmp -s "$here/constraints.txt" "$venv/constraints.txt"
}

case "${1:-}" in
  --check)
    if [[ -f "$marker" ]] && same_pins; then
      echo "$py"; exit 0
    fi
    if [[ -f "$marker" ]]; then
      echo "the peers' environment at $venv was built from other pins (bash bench/peers/env.sh rebuilds it)" >&2
    else
      echo "the Python peers' environment is not built (bash bench/peers/env.sh)" >&2
    fi
    exit 1 ;;
  --path) echo "$py"; exit 0 ;;
  "") ;;
  *) echo "usage: bash bench/peers/env.sh [--check|--path]" >&2; exit 2 ;;
esac

if [[ -f "$marker" ]] && same_pins; then
  echo "peers' environment: $venv (built $(cat "$marker"))"
  exit 0
fi

start=$(date +%s)
base="${PYTHON:-python3}"
version="$("$base" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [[ "$version" != "3.11" ]]; then
  echo "warning: the pins were checked on Python 3.11, $base is $version" >&2
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$base" -m venv "$venv"
# --no-cache-dir: the CUDA wheels would otherwise be kept twice (cache + venv), ~5 GB more.
"$py" -m pip install --disable-pip-version-check --no-cache-dir --quiet \
  -r "$here/requirements.txt" -c "$here/constraints.txt"
cp "$here/requirements.txt" "$here/constraints.txt" "$venv/"
"$py" -m pip freeze --disable-pip-version-check > "$venv/freeze.txt"
# The first import of torch reads a few GB of shared libraries; do it here, not in the
# first timed run.
"$py" -c 'import torch, torchvision, cassandra, PIL, numpy; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cassandra-driver", cassandra.__version__)'
took=$(( $(date +%s) - start ))
size="$(du -sh "$venv" | cut -f1)"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), ${took} s, ${size}" > "$marker"
echo "peers' environment: $venv (${took} s, ${size})"
