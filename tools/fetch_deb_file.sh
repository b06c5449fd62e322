#!/usr/bin/env bash
# fetch_deb_file.sh PACKAGE PATH-IN-PACKAGE OUTPUT: one file out of a Debian package, without
# installing it (apt-get download + dpkg-deb). Skips when OUTPUT already exists. Used to take
# real photographs (sklearn's china.jpg, flower.jpg) for the JPEG fixtures and benchmarks.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: fetch_deb_file.sh PACKAGE PATH-IN-PACKAGE OUTPUT" >&2; exit 2; }
[ -s "$3" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "$1" >/dev/null 2>&1) || { echo "fetch_deb_file.sh: apt-get download $1 failed (run apt-get update?)" >&2; exit 1; }
mkdir -p "$(dirname "$3")"
dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -O "./$2" > "$3.part"
mv "$3.part" "$3"
