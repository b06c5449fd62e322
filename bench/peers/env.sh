#!/usr/bin/env bash
# Builds a Python peer's virtualenv once, from PyPI: pins/NAME.requirements.txt's packages, every
# dependency held at pins/NAME.constraints.txt's version. One venv per peer family, as their pins
# disagree (MosaicML Streaming wants NumPy < 2.2, torch 2.14 is pinned with NumPy 2.4).
#
#   bash bench/peers/env.sh [NAME]           build it if absent; print where it is and how long it took
#   bash bench/peers/env.sh [NAME] --check   exit 0 and print its python if it is built, 1 if not
#   bash bench/peers/env.sh [NAME] --path    print the python it would use (built or not)
#
# NAME: torch (default; PyTorch's DataLoader peers), tf (tf.data), streaming (MosaicML Streaming).
# The benches call it; the test command never does (it only asks --check). A build that
# stops half way leaves no `.complete` marker, so the next call starts it again from scratch.
# Where: ${CASSETTE_CACHE:-$HOME/.cache/cassette}/peers-venv (torch), peers-NAME-venv (others).
# Python: $PYTHON or python3 (3.11).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name=torch
if [[ $# -gt 0 && "$1" != --* ]]; then name="$1"; shift; fi
case "$name" in
  torch) venv_dir=peers-venv; probe='import torch, torchvision, cassandra, PIL, numpy; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cassandra-driver", cassandra.__version__)' ;;
  tf) venv_dir=peers-tf-venv; probe='import tensorflow as tf, cassandra, PIL, numpy; print("tensorflow", tf.__version__, "cassandra-driver", cassandra.__version__)' ;;
  streaming) venv_dir=peers-streaming-venv; probe='import streaming, torch, cassandra, PIL, numpy; print("mosaicml-streaming", streaming.__version__, "torch", torch.__version__)' ;;
  *) echo "unknown peer environment '$name' (torch, tf or streaming)" >&2; exit 2 ;;
esac
requirements="$here/pins/$name.requirements.txt"
constraints="$here/pins/$name.constraints.txt"
venv="${CASSETTE_CACHE:-$HOME/.cache/cassette}/$venv_dir"
marker="$venv/.complete"
py="$venv/bin/python"

# The venv keeps copies of the pin files it was built from; other pins mean build again.
same_pins() {
  cmp -s "$requirements" "$venv/requirements.txt" && cmp -s "$constraints" "$venv/constraints.txt"
}

case "${1:-}" in
  --check)
    if [[ -f "$marker" ]] && same_pins; then
      echo "$py"; exit 0
    fi
    if [[ -f "$marker" ]]; then
      echo "the $name peers' environment at $venv was built from other pins (bash bench/peers/env.sh $name rebuilds it)" >&2
    else
      echo "the $name peers' Python environment is not built (bash bench/peers/env.sh $name)" >&2
    fi
    exit 1 ;;
  --path) echo "$py"; exit 0 ;;
  "") ;;
  *) echo "usage: bash bench/peers/env.sh [torch|tf|streaming] [--check|--path]" >&2; exit 2 ;;
esac

if [[ -f "$marker" ]] && same_pins; then
  echo "$name peers' environment: $venv (built $(cat "$marker"))"
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
  -r "$requirements" -c "$constraints"
cp "$requirements" "$venv/requirements.txt"
cp "$constraints" "$venv/constraints.txt"
"$py" -m pip freeze --disable-pip-version-check > "$venv/freeze.txt"
# The first import of torch or tensorflow reads a few GB of shared libraries; do it here, not
# in the first timed run.
"$py" -c "$probe"
took=$(( $(date +%s) - start ))
size="$(du -sh "$venv" | cut -f1)"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), ${took} s, ${size}" > "$marker"
echo "$name peers' environment: $venv (${took} s, ${size})"
