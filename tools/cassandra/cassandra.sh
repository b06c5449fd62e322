#!/usr/bin/env bash
# The local Apache Cassandra node for tests and development, from Maven Central jars.
#
#   cassandra.sh fetch                  download the jars (once, into $CASSETTE_CACHE/cassandra/lib)
#   cassandra.sh lib                    print the folder of the jars (fetching them if absent)
#   cassandra.sh start [--node N]       start node N (1: 127.0.0.1, 2: 127.0.0.2, …); returns when CQL answers
#   cassandra.sh stop  [--node N|--all] stop it (SIGTERM, then SIGKILL), delete its data
#   cassandra.sh status [--node N]      "running (pid P) on HOST:9042" or "stopped"; exit 0 only if running
#
# Data lives in a temporary directory and is deleted on stop: this node is for tests, not for keeps.
# Verified: Cassandra 5.0.8 on OpenJDK 17.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${CASSETTE_CACHE:-$HOME/.cache/cassette}
VERSION=$(sed -n 's:.*<cassandra.version>\(.*\)</cassandra.version>.*:\1:p' "$HERE/pom.xml")
LIB=$CACHE/cassandra/$VERSION/lib
RUNROOT=${CASSETTE_CASSANDRA_RUN:-${TMPDIR:-/tmp}/cassette-cassandra}
CQL_PORT=${CASSETTE_CQL_PORT:-9042}
STORAGE_PORT=${CASSETTE_STORAGE_PORT:-7000}
HEAP=${CASSETTE_CASSANDRA_HEAP:-1G}
TIMEOUT=${CASSETTE_CASSANDRA_TIMEOUT:-180}

die() { echo "cassandra: $*" >&2; exit 1; }
usage() { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

cmd=${1:-}; shift || true
NODE=1; ALL=0
while [ $# -gt 0 ]; do
  case "$1" in
    --node) NODE=${2:?--node needs a number}; shift 2 ;;
    --node=*) NODE=${1#--node=}; shift ;;
    --all) ALL=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (try --help)" ;;
  esac
done
[[ "$NODE" =~ ^[1-9]$ ]] || die "cannot use --node $NODE: it must be 1..9"
HOST=127.0.0.$NODE
RUN=$RUNROOT/node$NODE

java_bin() {
  local j=${JAVA_HOME:+$JAVA_HOME/bin/}java
  # Cassandra 5.0 runs on Java 11 or 17 only; prefer Debian's 17 if JAVA_HOME points elsewhere.
  local v; v=$("$j" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  if [ "$v" != 17 ] && [ "$v" != 11 ]; then
    for c in /usr/lib/jvm/java-17-openjdk-*/bin/java; do [ -x "$c" ] && { echo "$c"; return; }; done
    die "cannot start Cassandra $VERSION as it needs Java 11 or 17: $j is Java $v"
  fi
  echo "$j"
}

fetch() {
  if [ -f "$LIB/.complete" ]; then echo "    Cassandra $VERSION jars present ($LIB)"; return; fi
  command -v mvn >/dev/null || die "cannot fetch Cassandra: mvn not found (run tools/setup.sh as root)"
  mkdir -p "$LIB"
  echo "    fetching cassandra-all $VERSION and its runtime dependencies from Maven Central"
  # Maven logs harmless ERROR lines about ${jmc5.path} system paths; the build still succeeds.
  if ! mvn -B -q -f "$HERE/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$LIB" >"$CACHE/cassandra/mvn.log" 2>&1; then
    tail -n 20 "$CACHE/cassandra/mvn.log" >&2
    die "cannot fetch Cassandra jars: mvn failed (log: $CACHE/cassandra/mvn.log)"
  fi
  ls "$LIB"/jamm-*.jar >/dev/null 2>&1 || die "cannot use the fetched jars: jamm agent missing in $LIB"
  touch "$LIB/.complete"
  echo "    $(ls "$LIB"/*.jar | wc -l) jars, $(du -sh "$LIB" | cut -f1)"
}

cql_ping() { # cql_ping HOST PORT: 0 when a CQL server answers OPTIONS with SUPPORTED (protocol v4)
  local out
  out=$(timeout 3 bash -c "exec 3<>/dev/tcp/$1/$2 && printf '\x04\x00\x00\x00\x05\x00\x00\x00\x00' >&3 && head -c 5 <&3 | od -An -tx1" 2>/dev/null) || return 1
  set -- $out; [ "${1:-}" = 84 ] && [ "${5:-}" = 06 ]
}

pid_of() { [ -f "$RUN/cassandra.pid" ] && cat "$RUN/cassandra.pid" || true; }
alive() { local p; p=$(pid_of); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

write_conf() {
  # Node 1 seeds itself. Node N > 1 joins node 1's cluster when node 1 runs (a second replica
  # for fault tests), else it starts a cluster of its own rather than wait for a missing seed.
  local seeds=127.0.0.1
  if [ "$NODE" != 1 ] && ! cql_ping 127.0.0.1 "$CQL_PORT"; then seeds=$HOST; fi
  # With logins on (CASSETTE_CASSANDRA_AUTH=PasswordAuthenticator, as test/run.ts starts it),
  # permissions are enforced too, as on a production cluster: a role granted SELECT only is
  # refused anything else (test/conformance/store.test.ts reads as one).
  local AUTHORIZER=AllowAllAuthorizer
  if [ "${CASSETTE_CASSANDRA_AUTH:-AllowAllAuthenticator}" != AllowAllAuthenticator ]; then AUTHORIZER=CassandraAuthorizer; fi
  cat > "$RUN/cassandra.yaml" <<YAML
cluster_name: 'cassette test'
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
commitlog_sync: periodic
commitlog_sync_period: 10000ms
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$seeds"
num_tokens: 1
listen_address: $HOST
rpc_address: $HOST
storage_port: $STORAGE_PORT
native_transport_port: $CQL_PORT
start_native_transport: true
data_file_directories:
  - $RUN/data
commitlog_directory: $RUN/commitlog
saved_caches_directory: $RUN/saved_caches
hints_directory: $RUN/hints
cdc_raw_directory: $RUN/cdc_raw
commitlog_disk_access_mode: legacy
commitlog_segment_size: 64MiB
memtable_allocation_type: heap_buffers
memtable_heap_space: 128MiB
key_cache_size: 8MiB
counter_cache_size: 0MiB
row_cache_size: 0MiB
concurrent_reads: 16
concurrent_writes: 16
concurrent_counter_writes: 8
concurrent_materialized_view_writes: 8
concurrent_compactors: 1
auto_snapshot: false
incremental_backups: false
hinted_handoff_enabled: false
authenticator: ${CASSETTE_CASSANDRA_AUTH:-AllowAllAuthenticator}
authorizer: $AUTHORIZER
role_manager: CassandraRoleManager
native_transport_max_frame_size: 64MiB
batch_size_fail_threshold: 5000KiB
batch_size_warn_threshold: 1000KiB
YAML
  cat > "$RUN/logback.xml" <<'XML'
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${cassandra.logdir}/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %logger{30} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
XML
}

start() {
  if alive; then echo "cassandra node $NODE already running (pid $(pid_of)) on $HOST:$CQL_PORT"; return; fi
  [ -f "$LIB/.complete" ] || fetch
  if cql_ping "$HOST" "$CQL_PORT"; then die "cannot start node $NODE: something else already answers CQL on $HOST:$CQL_PORT"; fi
  local JAVA; JAVA=$(java_bin)
  rm -rf "$RUN"; mkdir -p "$RUN"/{data,commitlog,saved_caches,hints,cdc_raw,logs,tmp,triggers}
  write_conf
  local JAMM; JAMM=$(ls "$LIB"/jamm-*.jar | head -n1)
  MALLOC_ARENA_MAX=4 setsid "$JAVA" \
    -Xms"$HEAP" -Xmx"$HEAP" -Xss256k \
    -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1 -XX:MaxGCPauseMillis=300 \
    -XX:+UseThreadPriorities -XX:+PerfDisableSharedMem -XX:+ExitOnOutOfMemoryError \
    -XX:TieredStopAtLevel=1 \
    -ea -da:net.openhft... -javaagent:"$JAMM" -Djdk.attach.allowAttachSelf=true \
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
    --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED \
    --add-exports java.management/com.sun.jmx.remote.security=ALL-UNNAMED \
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED \
    --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED \
    --add-exports java.sql/java.sql=ALL-UNNAMED \
    --add-exports java.base/java.lang.ref=ALL-UNNAMED \
    --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED \
    --add-opens java.base/java.lang.module=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.loader=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.module=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED \
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
    --add-opens java.base/java.io=ALL-UNNAMED \
    --add-opens java.base/java.lang.reflect=ALL-UNNAMED \
    --add-opens java.base/java.lang=ALL-UNNAMED \
    --add-opens java.base/java.util=ALL-UNNAMED \
    --add-opens java.base/java.nio=ALL-UNNAMED \
    --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED \
    --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED \
    --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED \
    --add-opens java.base/java.nio.charset=ALL-UNNAMED \
    --add-opens java.base/java.util.concurrent=ALL-UNNAMED \
    --add-opens java.base/java.util.concurrent.atomic=ALL-UNNAMED \
    -Dio.netty.tryReflectionSetAccessible=true -Dio.netty.allocator.useCacheForAllThreads=true \
    -Dio.netty.allocator.maxOrder=11 -Djava.net.preferIPv4Stack=true -Dchronicle.analytics.disable=true \
    -Djava.io.tmpdir="$RUN/tmp" -Djna.tmpdir="$RUN/tmp" -Dio.netty.native.workdir="$RUN/tmp" \
    -Dcassandra.config="file://$RUN/cassandra.yaml" -Dcassandra.storagedir="$RUN" \
    -Dcassandra.logdir="$RUN/logs" -Dlogback.configurationFile="$RUN/logback.xml" \
    -Dcassandra-foreground=yes -Dcassandra.triggers_dir="$RUN/triggers" \
    -Dcassandra.native_transport_port="$CQL_PORT" -Dcassandra.storage_port="$STORAGE_PORT" \
    -Dcassandra.libjemalloc=- -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=1000 \
    -Dcassandra.skip_sync=true -Dcassandra.unsafesystem=true \
    -Dcassandra.superuser_setup_delay_ms=0 -Dcassandra.auth_bcrypt_gensalt_log2_rounds=4 \
    -cp "$LIB/*" org.apache.cassandra.service.CassandraDaemon \
    >"$RUN/logs/stdout.log" 2>&1 < /dev/null &
  echo $! > "$RUN/cassandra.pid"
  local pid=$!; local t0=$SECONDS
  printf 'starting cassandra %s node %s on %s:%s (pid %s, data in %s) ' "$VERSION" "$NODE" "$HOST" "$CQL_PORT" "$pid" "$RUN"
  until cql_ping "$HOST" "$CQL_PORT"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo; tail -n 40 "$RUN/logs/stdout.log" "$RUN/logs/system.log" >&2 || true
      die "node $NODE exited during start-up (logs above, in $RUN/logs)"
    fi
    if [ $((SECONDS - t0)) -ge "$TIMEOUT" ]; then
      echo; tail -n 40 "$RUN/logs/system.log" >&2 || true
      stop_node; die "node $NODE did not answer CQL within ${TIMEOUT}s"
    fi
    printf '.'; sleep 1
  done
  echo " ready in $((SECONDS - t0))s"
}

stop_node() {
  local p; p=$(pid_of)
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$p" 2>/dev/null || true
    echo "stopped cassandra node $NODE (pid $p)"
  else
    echo "cassandra node $NODE is not running"
  fi
  rm -rf "$RUN"
}

stop() {
  if [ "$ALL" = 1 ]; then
    for d in "$RUNROOT"/node*; do [ -d "$d" ] || continue; NODE=${d##*node}; HOST=127.0.0.$NODE; RUN=$d; stop_node; done
  else stop_node; fi
}

status() {
  if alive && cql_ping "$HOST" "$CQL_PORT"; then echo "running (pid $(pid_of)) on $HOST:$CQL_PORT"
  elif alive; then echo "starting (pid $(pid_of)) on $HOST:$CQL_PORT"; exit 1
  else echo "stopped"; exit 1; fi
}

case "$cmd" in
  fetch) fetch ;;
  lib) fetch >&2; echo "$LIB" ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
