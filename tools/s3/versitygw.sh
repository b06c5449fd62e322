#!/usr/bin/env bash
# A real S3-compatible server for cassette's tests, benchmarks and examples: versitygw (Versity's
# S3 gateway, Apache-2.0) over a plain folder, built from source through the Go module proxy
# into the cache, like the Cassandra jars.
#
#   bash tools/s3/versitygw.sh build              # once (the set-up script runs it)
#   bash tools/s3/versitygw.sh start [DIR] [PORT] # a server on 127.0.0.1:PORT (default 7070; auto: a free one) over DIR
#   bash tools/s3/versitygw.sh stop
#
# `start` prints the environment a client needs (AWS_ACCESS_KEY_ID, …, AWS_ENDPOINT_URL).
set -euo pipefail
VERSION=v1.8.0
CACHE=${CASSETTE_CACHE:-$HOME/.cache/cassette}
BIN=$CACHE/versitygw/$VERSION/versitygw
RUN=${CASSETTE_S3_RUN:-$CACHE/versitygw/run}
die() { printf 'versitygw: %s\n' "$*" >&2; exit 1; }

case "${1:-}" in
  build)
    if [ -x "$BIN" ]; then echo "    versitygw $VERSION is built ($BIN)"; exit 0; fi
    command -v go >/dev/null || die "cannot build versitygw: 'go' not found (install Go 1.24 or later)"
    echo "    building github.com/versity/versitygw/cmd/versitygw@$VERSION (Go module proxy)"
    tmp=$(mktemp -d)
    GOBIN=$tmp GOFLAGS=-buildvcs=false go install "github.com/versity/versitygw/cmd/versitygw@$VERSION" \
      || { rm -rf "$tmp"; die "go install github.com/versity/versitygw/cmd/versitygw@$VERSION failed: no network to the Go module proxy?"; }
    mkdir -p "$(dirname "$BIN")"
    mv "$tmp/versitygw" "$BIN"
    rm -rf "$tmp"
    echo "    $BIN"
    ;;
  path)
    echo "$BIN"
    ;;
  start)
    [ -x "$BIN" ] || die "not built: run bash tools/s3/versitygw.sh build (or tools/setup.sh)"
    dir=${2:-$RUN/data}
    port=${3:-7070}
    if [ "$port" = auto ]; then
      port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    fi
    mkdir -p "$dir" "$RUN"
    if [ -f "$RUN/pid" ] && kill -0 "$(cat "$RUN/pid")" 2>/dev/null; then die "already running (pid $(cat "$RUN/pid")); stop it first"; fi
    key=${CASSETTE_S3_KEY:-cassette}
    secret=${CASSETTE_S3_SECRET:-cassette-secret}
    # --keep-alive: without it the gateway closes every connection after one answer.
    nohup "$BIN" --access "$key" --secret "$secret" --port "127.0.0.1:$port" --keep-alive --quiet \
      --virtual-domain 127.0.0.1 posix "$dir" > "$RUN/versitygw.log" 2>&1 &
    echo $! > "$RUN/pid"
    for _ in $(seq 50); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "versitygw on http://127.0.0.1:$port over $dir (pid $(cat "$RUN/pid"), log $RUN/versitygw.log)"
        echo "export AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret AWS_ENDPOINT_URL=http://127.0.0.1:$port"
        exit 0
      fi
      sleep 0.1
    done
    die "did not listen on 127.0.0.1:$port within 5 s: $(tail -3 "$RUN/versitygw.log")"
    ;;
  stop)
    if [ -f "$RUN/pid" ] && kill "$(cat "$RUN/pid")" 2>/dev/null; then echo "stopped"; else echo "not running"; fi
    rm -f "$RUN/pid"
    ;;
  *)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    [ "${1:-}" = --help ] || [ "${1:-}" = -h ] || exit 2
    ;;
esac
