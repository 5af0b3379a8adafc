#!/bin/bash
# One sitting of issue 27's measures on one machine (docs/BENCHMARKS.md, "On a 16-core machine"):
# memory per idle stream at CONNS streams, delivery at each of RATES posts/s (normal and floor,
# two instances), a reconnect storm, the fan-out pass against pipelined ZADD, and, with "old",
# an older build's idle streams and deliveries on the same data.
#
# W holds bin/ (chorus, chorus-bench, social.test from `go test -c ./social`, chorus-old for
# "old", and redis-server and redis-cli unless they are on PATH), dump.rdb (the data, loaded by
# the Redis this starts), users.json and storm-users.json (chorus-bench's users files for that
# data). Made once, on any machine, against a Redis saved to dump.rdb afterwards:
#   chorus-bench -url URL -conns 18000 -authors 180 -followers-per-author 100 -rate 0 -hold 0 \
#     -users-file users.json
#   chorus-bench -url URL -conns 10500 -authors 0 -rate 0 -hold 0 -users-file storm-users.json
#   chorus-bench -storm -url URL1,URL2 -storm-kill-pid PID1 -users-file storm-users.json \
#     -conns 10000 -observers 500 -friends-per-mover 3   # makes the storm's friendships
# (servers run with -signup-limit off -signin-limit off -follow-limit off
# -max-connections-per-address 0 and an open-file limit of 20,000).
#
# bench-sitting.sh [PHASES]   PHASES: any of idle deliv storm fanout old, in the order given
# env: W, OUT (where the reports go), CONNS, AUTHORS, RATES, DUR, CPW (streams per worker
# process of the tool), RP (Redis port), PACK (a folder holding pack.tar.gz of W, unpacked
# into W first), PROFILE (seconds of CPU profile taken from the first instance of each delivery
# run, once its posts began, and a heap profile of the idle streams; 0: none), MODES (the
# delivery runs' modes, "normal floor"), OLD_IDLE (0: "old" runs no idle streams), OLDFLAGS
# (flags of the older build's servers, as NEWFLAGS for one that has them), DRAIN (the
# servers' drain flag, "-drain-window 0"; '' for a build without it)
#
# W/bin may hold redis-server and redis-cli as scripts that run the real ones (W/redis/) with
# the libraries beside them (W/redis/lib/), through the loader carried there too, on a machine
# that lacks them or has others.
set -u
PHASES=${1:-"idle deliv storm fanout old"}
OUT=${OUT:-/tmp/devout}; mkdir -p "$OUT"
W=${W:-/tmp/w}
CONNS=${CONNS:-18000}; AUTHORS=${AUTHORS:-180}; RATES=${RATES:-"50 200"}; DUR=${DUR:-20s}
CPW=${CPW:-9000}; PROFILE=${PROFILE:-8}; MODES=${MODES:-"normal floor"}
if [ -n "${PACK:-}" ] && [ ! -x "$W/bin/chorus" ]; then
  mkdir -p "$W" && tar -xzf "$PACK/pack.tar.gz" -C "$W" || exit 1
fi
export PATH=$W/bin:$PATH
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/summary.txt"; }
{ uname -a; nproc; ulimit -n; head -3 /proc/meminfo; grep -m1 'model name' /proc/cpuinfo; } > "$OUT/env.txt" 2>&1
log "start: $(nproc) cpus, nofile $(ulimit -n), phases: $PHASES"

RP=${RP:-26950}
cd "$W"
redis-cli -p $RP ping >/dev/null 2>&1 || {
  redis-server --port $RP --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --dir "$W" --dbfilename dump.rdb --logfile "$W/redis.log" --pidfile "$W/redis.pid"
  for i in $(seq 50); do redis-cli -p $RP ping 2>/dev/null | grep -q PONG && break; sleep 0.2; done
}
log "redis: $(redis-cli -p $RP dbsize) keys"

# A run's streams are gone once the tool ends: a stop need not wait out the
# drain's window (DRAIN='' for a build before -drain-window).
DRAIN=${DRAIN--drain-window 0}
PORT=19300
# serve BIN FLAGS...: a fresh instance on the next port; sets SP (pid) and U (url)
serve() {
  local bin=$1; shift
  PORT=$((PORT + 1))
  local debug=()
  [ "$bin" = chorus ] && debug=(-debug-addr 127.0.0.1:$((PORT + 1000))) # not in older builds
  "$bin" -addr 127.0.0.1:$PORT -redis-url redis://127.0.0.1:$RP -heartbeat-interval 10s \
    -online-window 60s -signup-limit off -signin-limit off -post-limit off -follow-limit off \
    $DRAIN "${debug[@]}" "$@" > "$W/server-$PORT.log" 2>&1 &
  SP=$!; U=http://127.0.0.1:$PORT; DBG=127.0.0.1:$((PORT + 1000))
  for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && return; sleep 0.1; done
}
NEWFLAGS="-stream-open-limit off -stream-open-address-limit off -max-connections-per-address 0"
bench() { # bench LABEL ARGS...
  local label=$1; shift
  redis-cli -p $RP config resetstat > /dev/null # each run's commandstats alone
  timeout 150 chorus-bench -users-file "$W/users.json" -conns $CONNS -authors $AUTHORS \
    -followers-per-author 100 -workers -1 -conns-per-worker $CPW "$@" > "$W/$label.txt" 2>&1
  echo "rc $?" >> "$W/$label.txt"
  { echo "=== $label: $*"; grep -v 'level=' "$W/$label.txt"; } >> "$OUT/results.txt"
  log "$label: $(grep -E '^(connections|POST answer|  on the servers|PUBLISH answer|post→delivery|floor post→delivery|CPU|memory/conn|runtime/conn|deliveries|RESULT)' "$W/$label.txt" | tr -s ' ' | tr '\n' '|')"
  # Redis's own time per call, to set beside the servers' wait on Redis ("on the servers"): what
  # is left of that wait is the trips and the wake-ups. The counts are the whole run's (sign-ins,
  # openings and heartbeats too, not the posts alone); EVALSHA is every script's, presence's and
  # the rate limit's too, and a script's time holds that of the commands it calls, which are
  # counted under their own names as well.
  redis-cli -p $RP info commandstats > "$OUT/$label-commandstats.txt"
  log "$label redis: $(grep -E '^cmdstat_(evalsha|eval|zadd|publish|spublish|zmscore|zrangebyscore):' "$OUT/$label-commandstats.txt" |
    sed -E 's/^cmdstat_([a-z]+):calls=([0-9]+),usec=[0-9]+,usec_per_call=([0-9.]+).*/\1 \2 calls \3 µs/' | tr '\n' '|')"
}
stop() { kill "$@" 2>/dev/null; wait "$@" 2>/dev/null; }
# profile LABEL WHAT ADDR: in the background, once the tool's log for run LABEL says WHAT
# ("posting" or "connected"), 2 s on, a CPU profile of PROFILE seconds (or, for "connected", a
# heap profile) of the instance whose debug listener is ADDR, into OUT
profile() {
  [ "$PROFILE" -gt 0 ] || return 0
  local label=$1 what=$2 addr=$3
  (
    for i in $(seq 600); do grep -q "msg=$what" "$W/$label.txt" 2>/dev/null && break; sleep 0.25; done
    sleep 2
    if [ "$what" = posting ]; then
      curl -s -m $((PROFILE + 20)) -o "$OUT/$label-cpu.pprof" "http://$addr/debug/pprof/profile?seconds=$PROFILE"
    else
      curl -s -m 30 -o "$OUT/$label-heap.pprof" "http://$addr/debug/pprof/heap"
      curl -s -m 30 -o "$OUT/$label-goroutines.txt" "http://$addr/debug/pprof/goroutine?debug=1"
    fi
  ) &
}

for phase in $PHASES; do
  case $phase in
  idle)
    serve chorus $NEWFLAGS; a=$SP
    profile idle-new connected $DBG
    bench idle-new -url $U -rate 0 -hold 20s -server-pid $a
    stop $a ;;
  deliv)
    for rate in $RATES; do
      for mode in $MODES; do
        serve chorus $NEWFLAGS; a=$SP; ua=$U
        profile deliv-$mode-r$rate posting $DBG
        serve chorus $NEWFLAGS; b=$SP; ub=$U
        f=""; [ $mode = floor ] && f=-floor
        bench deliv-$mode-r$rate -url $ua,$ub $f -rate $rate -duration $DUR -hold 2s -grace 3s \
          -redis-url redis://127.0.0.1:$RP -server-pid $a,$b
        stop $a $b
      done
    done ;;
  old)
    if [ "${OLD_IDLE:-1}" != 0 ]; then
      serve chorus-old $OLDFLAGS; a=$SP
      bench idle-old -url $U -rate 0 -hold 20s -server-pid $a
      stop $a
    fi
    for rate in $RATES; do
      serve chorus-old $OLDFLAGS; a=$SP; ua=$U
      serve chorus-old $OLDFLAGS; b=$SP; ub=$U
      bench deliv-old-r$rate -url $ua,$ub -rate $rate -duration $DUR -hold 2s -grace 3s \
        -redis-url redis://127.0.0.1:$RP -server-pid $a,$b
      stop $a $b
    done ;;
  storm)
    # as docs/BENCHMARKS.md's storms: per-user open limit on, per-address off
    SF="-max-connections-per-address 0 -stream-open-address-limit off"
    serve chorus $SF; a=$SP; ua=$U
    serve chorus $SF; b=$SP; ub=$U
    label=storm
    timeout 170 chorus-bench -storm -url $ua,$ub -storm-kill-pid $a -users-file "$W/storm-users.json" \
      -redis-url redis://127.0.0.1:$RP -conns ${STORM_MOVERS:-10000} -observers ${STORM_OBS:-500} \
      -friends-per-mover 3 -storm-spread 10s -storm-watch 15s -hold 10s > "$W/$label.txt" 2>&1
    echo "rc $?" >> "$W/$label.txt"
    { echo "=== $label"; grep -v 'level=' "$W/$label.txt"; } >> "$OUT/results.txt"
    log "storm: $(grep -iE 'per (stream|mover)|movers back|handshake|RESULT|^rc' "$W/$label.txt" | tr -s ' ' | tr '\n' '|')"
    stop $a $b ;;
  fanout)
    mkdir -p /tmp/fan && cd /tmp/fan
    timeout 200 social.test -test.run '^$' -test.bench 'BenchmarkFanout$/(lua|multi)/jobs=4' \
      -test.benchtime ${FANOUT_BT:-10x} -test.count ${FANOUT_COUNT:-2} > "$OUT/fanout.txt" 2>&1
    timeout 150 social.test -test.run '^$' -test.bench 'BenchmarkZAddPipelined$' -test.cpu 2 \
      -test.benchtime ${FANOUT_BT:-10x} -test.count ${FANOUT_COUNT:-2} >> "$OUT/fanout.txt" 2>&1
    log "fanout: $(grep -E '^Benchmark' "$OUT/fanout.txt" | tr -s ' ' | tr '\n' '|')" ;;
  esac
done
wait # the profiles
log "done"
