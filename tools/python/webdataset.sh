#!/usr/bin/env bash
# The virtualenv with the Python `webdataset` package that the WebDataset interop test reads
# cassette's shards with: built once from PyPI at webdataset.requirements.txt's pins, into the
# cache. A build cut short leaves no `.complete` marker, so the next call starts again.
#
#   bash tools/python/webdataset.sh           build it if absent (or built from other pins)
#   bash tools/python/webdataset.sh --path    print its python (built or not)
#
# Where: ${CASSETTE_CACHE:-$HOME/.cache/cassette}/wds-venv. Python: $PYTHON or python3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
requirements="$here/webdataset.requirements.txt"
venv="${CASSETTE_CACHE:-$HOME/.cache/cassette}/wds-venv"
py="$venv/bin/python"
if [[ "${1:-}" == --path ]]; then echo "$py"; exit 0; fi
if [[ -n "${1:-}" ]]; then echo "usage: bash tools/python/webdataset.sh [--path]" >&2; exit 2; fi

if [[ -f "$venv/.complete" ]] && cmp -s "$requirements" "$venv/requirements.txt"; then
  echo "    already built: $venv ($(cat "$venv/.complete"))"
  exit 0
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"${PYTHON:-python3}" -m venv "$venv"
"$py" -m pip install --disable-pip-version-check --no-cache-dir --quiet -r "$requirements"
"$py" -c 'import webdataset, sys; print("    webdataset", webdataset.__version__, "on Python", sys.version.split()[0])'
cp "$requirements" "$venv/requirements.txt"
date -u +%Y-%m-%dT%H:%M:%SZ > "$venv/.complete"
