#!/usr/bin/env bash
# Local Apache Cassandra nodes for tests and development, from Maven Central jars.
#
#   cassandra.sh fetch                     download the jars (once, into $CASSETTE_CACHE/cassandra/lib)
#   cassandra.sh lib                       print the folder of the jars (fetching them if absent)
#   cassandra.sh start [--node N]          start node N (1: 127.0.0.1, 2: 127.0.0.2, …); returns when CQL answers
#   cassandra.sh start --nodes K           a cluster: nodes 1..K one after another, each joined before the next
#   cassandra.sh stop                      stop every node of the run folder and delete their data
#   cassandra.sh stop --node N             stop node N only and keep its data
#   cassandra.sh restart --node N          stop node N (if it runs) and start it again with its data
#   cassandra.sh status [--node N] [--json] each node: "running (pid P) on HOST:PORT" or "stopped";
#                                          exit 0 only if all run; --json: [{node,address,port,pid,running,…}]
#
# Data: `stop` deletes it (these nodes are for tests: the next start is clean). `stop --node N`
# and `restart --node N` keep node N's data, and a start of a node whose folder holds data
# resumes it: it comes back as the same node (same host id, same data) and rejoins its cluster.
# Every verb reads and writes under CASSETTE_CASSANDRA_RUN (one folder per node, nodeN/).
#
# TLS for clients: CASSETTE_CASSANDRA_TLS=required (CQL only over TLS: plaintext is refused)
# or mutual (a client certificate signed by the CA too), read when a node starts. The first
# such start makes, in the run folder's tls/ (kept by stop: one CA per run folder, 30 days),
# ca.pem, a certificate per node (subjectAltName IP:127.0.0.N), client.pem + client.key, and
# the PKCS12 stores Cassandra reads. A client then connects with
#   cassandra://127.0.0.1/KS?ca=RUN/tls/ca.pem&cert=RUN/tls/client.pem&key=RUN/tls/client.key
# Verified: Cassandra 5.0.8 on OpenJDK 17.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${CASSETTE_CACHE:-$HOME/.cache/cassette}
VERSION=$(sed -n 's:.*<cassandra.version>\(.*\)</cassandra.version>.*:\1:p' "$HERE/pom.xml")
LIB=$CACHE/cassandra/$VERSION/lib
RUNROOT=${CASSETTE_CASSANDRA_RUN:-${TMPDIR:-/tmp}/cassette-cassandra}
CQL_PORT=${CASSETTE_CQL_PORT:-9042}
STORAGE_PORT=${CASSETTE_STORAGE_PORT:-7000}
# One node: 1G. A cluster's nodes share 2 cores and the memory with the tests: 768M each (about
# 1.2 GB resident per node once started).
HEAP=${CASSETTE_CASSANDRA_HEAP:-}
TIMEOUT=${CASSETTE_CASSANDRA_TIMEOUT:-180}
# Client TLS (see the header): off, required or mutual; the certificates live in $TLS_DIR.
TLS_MODE=${CASSETTE_CASSANDRA_TLS:-off}
case "$TLS_MODE" in off|required|mutual) ;; *) die "cannot use CASSETTE_CASSANDRA_TLS=$TLS_MODE: it must be off, required or mutual" ;; esac
TLS_DIR=$RUNROOT/tls
# `start --nodes K` writes K here: node N ≤ K is a member of that cluster (seeded by node 1).
CLUSTER_FILE=$RUNROOT/cluster

die() { echo "cassandra: $*" >&2; exit 1; }
usage() { sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

cmd=${1:-}; shift || true
NODE=""; NODES=""; ALL=0; JSON=0
while [ $# -gt 0 ]; do
  case "$1" in
    --node) NODE=${2:?--node needs a number}; shift 2 ;;
    --node=*) NODE=${1#--node=}; shift ;;
    --nodes) NODES=${2:?--nodes needs a number}; shift 2 ;;
    --nodes=*) NODES=${1#--nodes=}; shift ;;
    --all) ALL=1; shift ;;
    --json) JSON=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (try --help)" ;;
  esac
done
[ -z "$NODE" ] || [[ "$NODE" =~ ^[1-9]$ ]] || die "cannot use --node $NODE: it must be 1..9"
[ -z "$NODES" ] || [[ "$NODES" =~ ^[1-9]$ ]] || die "cannot use --nodes $NODES: it must be 1..9"
[ -z "$NODE" ] || [ -z "$NODES" ] || die "takes --node N or --nodes K, not both"
[ -z "$NODES" ] || [ "$cmd" = start ] || die "--nodes K is for start (stop and status read the run folder)"
[ "$cmd" != restart ] || [ -n "$NODE" ] || die "restart needs --node N"

set_node() { NODE=$1; HOST=127.0.0.$1; RUN=$RUNROOT/node$1; }
NODE_ARG=$NODE # what was asked: stop and status without --node mean every node
set_node "${NODE:-1}"
cluster_size() { [ -f "$CLUSTER_FILE" ] && cat "$CLUSTER_FILE" || echo 0; }
in_cluster() { [ "$NODE" -le "$(cluster_size)" ]; }
# The nodes the run folder holds (started, and not deleted by a stop), in order.
known_nodes() { local d; for d in "$RUNROOT"/node[1-9]; do [ -d "$d" ] && echo "${d##*node}"; done; return 0; }

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
  out=$(timeout 3 bash -c "exec 3<>/dev/tcp/$1/$2 && printf '\x04\x00\x00\x00\x05\x00\x00\x00\x00' >&3 && head -c 5 <&3 | od -An -tx1" 2>/dev/null) || out=""
  # A TLS-only node closes a plaintext connection: ask again over TLS, with the run folder's
  # client certificate (a mutual node wants one), when this run folder has made certificates.
  if [ -z "$out" ] && [ -f "$TLS_DIR/client.pem" ]; then
    # s_client ends at stdin's EOF (-no_ign_eof): the sleep leaves the answer time to arrive.
    out=$( { printf '\x04\x00\x00\x00\x05\x00\x00\x00\x00'; sleep 1; } | timeout 3 openssl s_client -quiet -no_ign_eof \
      -connect "$1:$2" -CAfile "$TLS_DIR/ca.pem" -cert "$TLS_DIR/client.pem" -key "$TLS_DIR/client.key" 2>/dev/null | head -c 5 | od -An -tx1 || true)
  fi
  set -- $out; [ "${1:-}" = 84 ] && [ "${5:-}" = 06 ]
}

# tls_make: the run folder's CA and client certificate (once), and node $NODE's certificate and
# keystore. Made here, at start: nothing secret is checked in, and the CA outlives any test run
# (30 days; made again when it expires within a day).
tls_make() {
  command -v openssl >/dev/null || die "cannot start node $NODE with TLS: openssl not found"
  command -v keytool >/dev/null || die "cannot start node $NODE with TLS: keytool (the JDK's) not found"
  mkdir -p "$TLS_DIR"; chmod 700 "$TLS_DIR"
  local days=30 ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes) q=(-days 30)
  if ! [ -f "$TLS_DIR/ca.pem" ] || ! openssl x509 -in "$TLS_DIR/ca.pem" -noout -checkend 86400 >/dev/null 2>&1; then
    rm -f "$TLS_DIR"/*
    # One random password for the PKCS12 stores (Cassandra needs one; nothing else guards them).
    openssl rand -hex 16 > "$TLS_DIR/store.password"
    openssl req -x509 "${ec[@]}" -keyout "$TLS_DIR/ca.key" -out "$TLS_DIR/ca.pem" -days $days \
      -subj "/CN=cassette test CA" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null || die "cannot make the TLS CA in $TLS_DIR (openssl failed)"
    openssl req "${ec[@]}" -keyout "$TLS_DIR/client.key" -out "$TLS_DIR/client.csr" -subj "/CN=cassette client" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' > "$TLS_DIR/client.ext"
    openssl x509 -req -in "$TLS_DIR/client.csr" -CA "$TLS_DIR/ca.pem" -CAkey "$TLS_DIR/ca.key" -CAcreateserial \
      -out "$TLS_DIR/client.pem" "${q[@]}" -extfile "$TLS_DIR/client.ext" 2>/dev/null || die "cannot sign the TLS client certificate in $TLS_DIR"
    # The truststore holds the CA, for mutual TLS: keytool marks it trusted (Java ignores
    # certificates in a PKCS12 file that openssl wrote without that attribute).
    keytool -importcert -noprompt -alias cassette-ca -file "$TLS_DIR/ca.pem" -keystore "$TLS_DIR/truststore.p12" \
      -storetype PKCS12 -storepass "$(cat "$TLS_DIR/store.password")" >/dev/null 2>&1 || die "cannot make the truststore in $TLS_DIR (keytool failed)"
  fi
  local n=node$NODE
  if ! [ -f "$TLS_DIR/$n.p12" ]; then
    openssl req "${ec[@]}" -keyout "$TLS_DIR/$n.key" -out "$TLS_DIR/$n.csr" -subj "/CN=$HOST" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:%s,DNS:localhost\n' "$HOST" > "$TLS_DIR/$n.ext"
    openssl x509 -req -in "$TLS_DIR/$n.csr" -CA "$TLS_DIR/ca.pem" -CAkey "$TLS_DIR/ca.key" -CAcreateserial \
      -out "$TLS_DIR/$n.pem" "${q[@]}" -extfile "$TLS_DIR/$n.ext" 2>/dev/null || die "cannot sign node $NODE's TLS certificate in $TLS_DIR"
    openssl pkcs12 -export -in "$TLS_DIR/$n.pem" -inkey "$TLS_DIR/$n.key" -certfile "$TLS_DIR/ca.pem" -name "$n" \
      -out "$TLS_DIR/$n.p12" -passout "file:$TLS_DIR/store.password" || die "cannot make node $NODE's keystore in $TLS_DIR"
  fi
}

# The client_encryption_options for cassandra.yaml: none when TLS is off. Cassandra 5.0.8's
# EncryptionOptions takes require_client_auth as a boolean (5.1 adds "optional").
tls_yaml() {
  [ "$TLS_MODE" != off ] || return 0
  local pw; pw=$(cat "$TLS_DIR/store.password")
  cat <<YAML
client_encryption_options:
  enabled: true
  optional: false
  keystore: $TLS_DIR/node$NODE.p12
  keystore_password: "$pw"
  store_type: PKCS12
  require_client_auth: $([ "$TLS_MODE" = mutual ] && echo true || echo false)
  truststore: $TLS_DIR/truststore.p12
  truststore_password: "$pw"
YAML
}

pid_of() { [ -f "$RUN/cassandra.pid" ] && cat "$RUN/cassandra.pid" || true; }
# Alive and still this node: a pid left by a node killed long ago may now be another process's.
alive() {
  local p; p=$(pid_of); [ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 1
  [ ! -r "/proc/$p/cmdline" ] || tr '\0' '\n' < "/proc/$p/cmdline" | grep -qxF -- "-Dcassandra.storagedir=$RUN"
}

write_conf() {
  # Node 1 seeds itself. A member of a cluster (start --nodes K) is always seeded by node 1.
  # Another node N > 1 joins node 1's cluster when node 1 runs (a second replica for fault
  # tests), else it starts a cluster of its own rather than wait for a missing seed.
  local seeds=127.0.0.1 tokens="num_tokens: 1"
  if [ "$NODE" != 1 ] && ! in_cluster && ! cql_ping 127.0.0.1 "$CQL_PORT"; then seeds=$HOST; fi
  # Periodic commit log sync: a write is acknowledged before its log entry is marked synced,
  # and replay after a kill -9 stops at the last mark, so up to 10 s of acknowledged writes are
  # lost. A cluster's nodes are killed on purpose (test/cluster/): there a write waits for the
  # mark (group sync, 20 ms windows; skip_sync leaves out the fsync, which a kill does not need).
  local commitlog_sync="commitlog_sync: periodic
commitlog_sync_period: 10000ms"
  if in_cluster; then
    commitlog_sync="commitlog_sync: group
commitlog_sync_group_window: 20ms"
    # One token per node, evenly spaced: node i of K owns 1/K of the ring (random tokens on so
    # few nodes can give one node most of it). 64-bit arithmetic wraps, the result is in range.
    local k; k=$(cluster_size)
    tokens="num_tokens: 1
initial_token: $(( -9223372036854775807 - 1 + (NODE - 1) * ((9223372036854775807 / k) * 2) ))"
  fi
  # With logins on (CASSETTE_CASSANDRA_AUTH=PasswordAuthenticator, as test/run.ts starts it),
  # permissions are enforced too, as on a production cluster: a role granted SELECT only is
  # refused anything else (test/conformance/store.test.ts reads as one).
  local AUTHORIZER=AllowAllAuthorizer
  if [ "${CASSETTE_CASSANDRA_AUTH:-AllowAllAuthenticator}" != AllowAllAuthenticator ]; then AUTHORIZER=CassandraAuthorizer; fi
  cat > "$RUN/cassandra.yaml" <<YAML
cluster_name: 'cassette test'
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
$commitlog_sync
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$seeds:$STORAGE_PORT"
$tokens
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
$(tls_yaml)
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

start_node() {
  if alive; then echo "cassandra node $NODE already running (pid $(pid_of)) on $HOST:$CQL_PORT"; return; fi
  [ -f "$LIB/.complete" ] || fetch
  if cql_ping "$HOST" "$CQL_PORT"; then die "cannot start node $NODE: something else already answers CQL on $HOST:$CQL_PORT"; fi
  local JAVA; JAVA=$(java_bin)
  # A folder with data is a node stopped with its data kept (stop --node N, restart, a crash):
  # it resumes as the same node. Anything else starts clean.
  local resumed=0
  if [ -n "$(ls -A "$RUN/data" 2>/dev/null)" ]; then resumed=1; rm -f "$RUN/cassandra.pid"
  else rm -rf "$RUN"; fi
  mkdir -p "$RUN"/{data,commitlog,saved_caches,hints,cdc_raw,logs,tmp,triggers}
  [ "$TLS_MODE" = off ] || tls_make
  write_conf
  local heap=$HEAP
  [ -n "$heap" ] || { if in_cluster && [ "$(cluster_size)" -gt 1 ]; then heap=768M; else heap=1G; fi; }
  # unsafesystem skips flushing the system tables after each change (faster starts and schema
  # changes); a cluster's node, killed on purpose, must find its schema again on restart.
  local unsafe_system=true
  if in_cluster; then unsafe_system=false; fi
  local JAMM; JAMM=$(ls "$LIB"/jamm-*.jar | head -n1)
  MALLOC_ARENA_MAX=4 setsid "$JAVA" \
    -Xms"$heap" -Xmx"$heap" -Xss256k \
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
    -Dcassandra.skip_sync=true -Dcassandra.unsafesystem="$unsafe_system" \
    -Dcassandra.superuser_setup_delay_ms=0 -Dcassandra.auth_bcrypt_gensalt_log2_rounds=4 \
    -cp "$LIB/*" org.apache.cassandra.service.CassandraDaemon \
    >"$RUN/logs/stdout.log" 2>&1 < /dev/null &
  echo $! > "$RUN/cassandra.pid"
  local pid=$!; local t0=$SECONDS
  local tls=""; [ "$TLS_MODE" = off ] || tls=" with $TLS_MODE TLS (CA $TLS_DIR/ca.pem)"
  if [ "$resumed" = 1 ]; then printf 'resuming cassandra %s node %s with its data on %s:%s%s (pid %s, data in %s) ' "$VERSION" "$NODE" "$HOST" "$CQL_PORT" "$tls" "$pid" "$RUN"
  else printf 'starting cassandra %s node %s on %s:%s%s (pid %s, data in %s) ' "$VERSION" "$NODE" "$HOST" "$CQL_PORT" "$tls" "$pid" "$RUN"; fi
  until cql_ping "$HOST" "$CQL_PORT"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      # A joining node gives its seed one ring delay (1 s here, for fast starts) to answer its
      # first gossip; on a loaded machine the seed can miss that. Starting again is enough.
      if grep -q "Unable to contact any seeds\|Unable to gossip with any peers" "$RUN/logs/stdout.log" && [ "${START_TRIES:-0}" -lt 3 ]; then
        echo " its seed did not answer its first gossip in time (a loaded machine?): starting it again"
        START_TRIES=$((${START_TRIES:-0} + 1))
        [ "$resumed" = 1 ] || rm -rf "$RUN"
        start_node; return
      fi
      echo; tail -n 40 "$RUN/logs/stdout.log" "$RUN/logs/system.log" >&2 || true
      die "node $NODE exited during start-up (logs above, in $RUN/logs)"
    fi
    if [ $((SECONDS - t0)) -ge "$TIMEOUT" ]; then
      echo; tail -n 40 "$RUN/logs/system.log" >&2 || true
      stop_node; die "node $NODE did not answer CQL within ${TIMEOUT}s"
    fi
    printf '.'; sleep 1
  done
  local ready=$((SECONDS - t0))
  # In a cluster, answering CQL is not enough: the other running members must see this node's
  # new life (NORMAL, at its new gossip generation) before a test writes at RF 3 or kills one.
  if in_cluster; then
    local others="" m
    for m in $(known_nodes); do
      [ "$m" != "$NODE" ] && [ "$m" -le "$(cluster_size)" ] && (set_node "$m"; alive) && others="$others${others:+,}127.0.0.$m"
    done
    if [ -n "$others" ]; then
      printf ' answers CQL in %ss, waiting for %s to see it' "$ready" "$others"
      local bun=$ROOT/node_modules/.bin/bun
      [ -x "$bun" ] || bun=bun
      if ! "$bun" "$HERE/ring.ts" joined "$HOST" "$CQL_PORT" "$others" >/dev/null; then
        echo; die "node $NODE answers CQL but its cluster does not see it joined (logs in $RUN/logs)"
      fi
    fi
  fi
  echo " ready in $((SECONDS - t0))s"
}

start() {
  if [ -n "$NODES" ]; then
    local k; k=$(cluster_size)
    if [ "$k" != 0 ] && [ "$k" != "$NODES" ] && [ -n "$(known_nodes)" ]; then
      die "cannot start --nodes $NODES: $RUNROOT holds a cluster of $k nodes (stop it first, or use another CASSETTE_CASSANDRA_RUN)"
    fi
    [ "$k" = 0 ] && [ -n "$(known_nodes)" ] && die "cannot start --nodes $NODES: $RUNROOT holds nodes started one by one ($(known_nodes | tr '\n' ' ')); stop them first"
    mkdir -p "$RUNROOT"; echo "$NODES" > "$CLUSTER_FILE"
    # One after another: a node joins while no other is joining (Cassandra refuses two range
    # movements at once), and on 2 cores parallel starts are no faster.
    local t0=$SECONDS i
    for i in $(seq 1 "$NODES"); do set_node "$i"; start_node; done
    echo "cluster of $NODES nodes ready in $((SECONDS - t0))s (seed 127.0.0.1, CQL port $CQL_PORT, run folder $RUNROOT)"
  else start_node; fi
}

stop_node() { # stop_node [delete]: SIGTERM, then SIGKILL after 30 s; delete the folder when asked
  local p; p=$(pid_of)
  if alive; then
    # Data that is kept is flushed by a clean shutdown (SIGTERM drains); data about to be
    # deleted needs none, and SIGKILL saves the drain's seconds per node.
    if [ -z "${1:-}" ]; then
      kill -TERM "$p" 2>/dev/null || true
      for _ in $(seq 1 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    fi
    kill -KILL "$p" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    echo "stopped cassandra node $NODE (pid $p)${1:+, data deleted}"
  else
    echo "cassandra node $NODE is not running${1:+ (data deleted)}"
  fi
  rm -f "$RUN/cassandra.pid"
  if [ -n "${1:-}" ]; then rm -rf "$RUN"; fi
  return 0
}

stop() {
  if [ -n "$NODE_ARG" ] && [ "$ALL" = 0 ]; then
    stop_node
    [ -d "$RUN/data" ] && echo "  its data is kept in $RUN: start --node $NODE or restart --node $NODE resumes it; stop with no --node deletes it"
    return 0
  fi
  # Every node the run folder holds, running or stopped with its data kept: all deleted.
  local n stopped=0
  for n in $(known_nodes); do set_node "$n"; stop_node delete; stopped=1; done
  [ "$stopped" = 1 ] || echo "cassandra node 1 is not running"
  rm -f "$CLUSTER_FILE"
}

restart() {
  stop_node
  start_node
}

status() {
  # --node N: that node. Else node 1 and every other node the run folder holds: one line when
  # that is node 1 alone, as before clusters ("running (pid P) on HOST:PORT"), else one per node.
  local nodes n pid state code=0 lines=() json=()
  if [ -n "$NODE_ARG" ]; then nodes=$NODE_ARG; else nodes=$( (echo 1; known_nodes) | sort -u); fi
  for n in $nodes; do
    set_node "$n"; pid=$(pid_of)
    if alive && cql_ping "$HOST" "$CQL_PORT"; then state=running; lines+=("running (pid $pid) on $HOST:$CQL_PORT")
    elif alive; then state=starting; lines+=("starting (pid $pid) on $HOST:$CQL_PORT")
    elif [ -d "$RUN/data" ]; then state=stopped; pid=""; lines+=("stopped, data kept in $RUN")
    else state=stopped; pid=""; lines+=("stopped"); fi
    [ "$state" = running ] || code=1
    json+=("{\"node\": $n, \"address\": \"$HOST\", \"port\": $CQL_PORT, \"pid\": ${pid:-null}, \"running\": $([ "$state" = running ] && echo true || echo false), \"state\": \"$state\", \"folder\": \"$RUN\"}")
  done
  if [ "$JSON" = 1 ]; then local IFS=,; echo "[${json[*]}]"
  elif [ "$(echo $nodes | wc -w)" = 1 ]; then echo "${lines[0]}"
  else local i=0; for n in $nodes; do echo "node $n: ${lines[$i]}"; i=$((i + 1)); done; fi
  exit "$code"
}

case "$cmd" in
  fetch) fetch ;;
  lib) fetch >&2; echo "$LIB" ;;
  start) start ;;
  stop) stop ;;
  restart) restart ;;
  status) status ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
