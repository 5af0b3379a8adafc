#!/usr/bin/env bash
# Runs every test of Chorus: installs what the tests need when it is missing
# and apt-get is there (redis-server; nginx for the load-balancer test;
# Chromium for the browser tests), starts a redis-server of its own on a
# free port and a three-master Redis Cluster, then vets, checks formatting
# and runs the tests under the race detector, and the social and web suites
# a second time on the cluster. Elsewhere, install them by hand first
# (README.md, "Test it").
# Extra arguments go to `go test` (e.g. -run TestFollow).
set -euo pipefail
cd "$(dirname "$0")/.."

# The browser the tests drive: CHORUS_TEST_CHROMIUM, or one of the names
# web/browser_helpers_test.go looks for.
have_browser() {
  [ -n "${CHORUS_TEST_CHROMIUM:-}" ] && return 0
  local name
  for name in chromium chromium-browser google-chrome google-chrome-stable; do
    command -v "$name" >/dev/null && return 0
  done
  return 1
}

need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
have_browser || need+=(chromium)
# -race needs cgo, so a C compiler: Go from its own tarball brings none.
command -v gcc >/dev/null || need+=(gcc libc6-dev)
if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    echo "test.sh: missing ${need[*]} (Debian package names), and there is no apt-get to install them:" >&2
    echo "test.sh: install redis-server and redis-cli (7.0 or later), nginx, gcc, and Chromium or Chrome" >&2
    echo "test.sh: (or set CHORUS_TEST_CHROMIUM), as README.md says under \"Test it\"" >&2
    exit 1
  fi
  echo "test.sh: installing ${need[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# A redis-server of our own on a free port, and a Redis Cluster of three
# masters; they go when this script ends.
workdir=$(mktemp -d)
redis_pid=
cluster_pids=()
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  for pid in "${cluster_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null
  rm -rf "$workdir"
}
trap cleanup EXIT
# Ports are taken below the kernel's ephemeral ones, which a busy machine's
# connections hold by thousands; a cluster node's bus listens 10,000 above
# its port, below them too.
read -r ephemeral _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || ephemeral=32768
port_span=$((ephemeral - 10000))
[ "$port_span" -ge 1000 ] || port_span=20000
cluster_span=$((ephemeral - 20003))
[ "$cluster_span" -ge 1000 ] || cluster_span=20000
for _ in $(seq 1 20); do
  port=$((10000 + RANDOM % port_span))
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$workdir" --loglevel warning >"$workdir/redis.log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 1 50); do
    # Ours only if it still runs: another server may hold the port.
    kill -0 "$redis_pid" 2>/dev/null || break
    if redis-cli -p "$port" ping >/dev/null 2>&1 && kill -0 "$redis_pid" 2>/dev/null; then break 2; fi
    sleep 0.1
  done
  kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true
  redis_pid=
done
if [ -z "$redis_pid" ]; then
  echo "test.sh: could not start redis-server" >&2
  cat "$workdir/redis.log" >&2
  exit 1
fi
export CHORUS_TEST_REDIS_URL="redis://127.0.0.1:$port"

# The cluster: three masters on consecutive ports, no replicas (the failover
# tests start clusters of their own, with replicas).
start_cluster() {
  local base=$1 addrs=() p i
  for i in 0 1 2; do
    p=$((base + i))
    mkdir -p "$workdir/cluster-$p"
    redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
      --cluster-enabled yes --cluster-config-file "$workdir/cluster-$p/nodes.conf" \
      --cluster-node-timeout 1000 --dir "$workdir/cluster-$p" --loglevel warning \
      >"$workdir/cluster-$p.log" 2>&1 &
    cluster_pids+=($!)
    addrs+=("127.0.0.1:$p")
  done
  for i in 0 1 2; do
    for _ in $(seq 1 50); do
      # Ours only if it still runs: another server may hold the port.
      kill -0 "${cluster_pids[$i]}" 2>/dev/null || return 1
      redis-cli -p "${addrs[$i]#*:}" ping >/dev/null 2>&1 && continue 2
      sleep 0.1
    done
    return 1
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-yes >"$workdir/cluster-create.log" 2>&1 || return 1
  for p in "${addrs[@]}"; do
    for _ in $(seq 1 100); do
      redis-cli -p "${p#*:}" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && continue 2
      sleep 0.1
    done
    return 1
  done
  CHORUS_TEST_REDIS_CLUSTER=$(IFS=,; echo "${addrs[*]}")
}
cluster_ok=
for _ in $(seq 1 5); do
  if start_cluster $((10000 + RANDOM % cluster_span)); then cluster_ok=1; break; fi
  for pid in "${cluster_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait "${cluster_pids[@]}" 2>/dev/null || true
  cluster_pids=()
done
if [ -z "$cluster_ok" ]; then
  echo "test.sh: could not start a Redis Cluster" >&2
  cat "$workdir"/cluster-*.log >&2
  exit 1
fi
export CHORUS_TEST_REDIS_CLUSTER
export CI="${CI:-true}"
echo "test.sh: redis-server $(redis-server --version | grep -o 'v=[^ ]*') on port $port, a cluster on $CHORUS_TEST_REDIS_CLUSTER"

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "test.sh: gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...
go test -race -count=1 -timeout 20m "$@" ./...
# The suites written against "the backend" once more, on the cluster (presence
# runs both within one run).
echo "test.sh: the social and web suites again, on the cluster"
CHORUS_TEST_BACKEND=cluster go test -race -count=1 -timeout 20m "$@" ./social/ ./web/
