#!/usr/bin/env bash
# edge-mc's demo: the whole system on this machine (make demo, make demo-down).
#
#   hack/demo.sh up      start everything, place an example workload, show the fleet status
#   hack/demo.sh status  show the fleet status again
#   hack/demo.sh down    stop everything the demo started; only the logs stay (.demo/logs/, and
#                        .demo/logs.previous/ from the run before)
#
# "up" starts, as processes detached from the terminal, whose PIDs it keeps in .demo/pids/ and
# whose logs go to .demo/logs/: a kcp server (the center), edge-controller-manager, three edge
# clusters and an edge-syncer for each. By default the edge clusters are workspaces of a second
# kcp: they store what is applied to them, as a Kubernetes API server does, but run no
# controllers, so nothing there ever runs pods. With DEMO_KUBE=1 they are real Kubernetes
# clusters (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and a kwok node that
# reports pods Running and Ready without running containers), run by hack/kube-cluster.
# With SHARDS=2 (or more) the center is a sharded kcp (a cache server, a root shard, further
# shards and a front-proxy, which everything reaches it through), run by hack/sharded-center;
# the fleet status then shows which shard holds each edge cluster's mailbox.
# Every port is a free one below the kernel's ephemeral range, so nothing collides with tests or
# with a kcp of your own. Run twice, "up" says the demo is already up.
#
# docs/quickstart.md is the same walk-through as commands to type.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
DEMO=$ROOT/.demo
LOGS=$DEMO/logs
PIDS=$DEMO/pids
BIN=$ROOT/bin
export PATH=$BIN:$PATH
unset KUBECONFIG

EDGES=(edge-1 edge-2 edge-3)
declare -A REGION=([edge-1]=eu [edge-2]=us [edge-3]=ap)
SELECTED=(edge-1 edge-2) # what examples/quickstart/placement.yaml selects: region eu or us
ESPW=root:espw IMW=root:imw WMW=root:wmw
PLACEMENT=hello NAMESPACE=hello REPLICAS=2

# How long each wait may take: kcp takes 20-60 s to start on a busy 2-core machine.
START_TIMEOUT=300
CONVERGE_TIMEOUT=240

CENTER_KUBECONFIG=$DEMO/kcp/admin.kubeconfig # kcp's own, for the demo's set-up
USER_KUBECONFIG=$DEMO/kubeconfig             # a copy for people, which kubectl ws may change
ECM_KUBECONFIG=$DEMO/ecm.kubeconfig          # edge-controller-manager's own identity, from kubectl edge init
EDGE_KCP_KUBECONFIG=$DEMO/edge-kcp/admin.kubeconfig

# ---- output -----------------------------------------------------------------------------------

STEP=0
STEPS=8
step() {
  STEP=$((STEP + 1))
  if ((STEPS > 1)); then
    printf '\n==> [%d/%d] %s\n' "$STEP" "$STEPS" "$*"
  else
    printf '\n==> %s\n' "$*"
  fi
}
info() { printf '    %s\n' "$*"; }

# show prints a command as it would be typed in the repository's root.
show() {
  local out="" a
  for a in "$@"; do
    a=${a//$ROOT\//}
    if [[ $a =~ [^A-Za-z0-9_./:=,@%+-] ]]; then a="'${a//\'/\'\\\'\'}'"; fi
    out+="${out:+ }$a"
  done
  printf '%s' "$out"
}

# run prints a command, runs it, and prints its output indented as it comes; if it fails, the
# demo fails.
run() {
  printf '    $ %s\n' "$(show "$@")"
  if ! "$@" 2>&1 | sed -u 's/^/      /'; then
    fail "this command failed: $(show "$@")"
  fi
}

# run_brief is run for commands that print one line per object: it prints the first line and
# how many more there were.
run_brief() {
  printf '    $ %s\n' "$(show "$@")"
  local out n
  if ! out=$("$@" 2>&1); then
    printf '%s\n' "$out" | sed 's/^/      /'
    fail "this command failed: $(show "$@")"
  fi
  n=$(printf '%s\n' "$out" | wc -l)
  printf '      %s\n' "$(printf '%s\n' "$out" | head -n 1)"
  if ((n > 1)); then printf '      ... and %d more like it\n' $((n - 1)); fi
}

# run_input INPUT COMMAND... is run with INPUT on the command's standard input.
run_input() {
  local input=$1
  shift
  printf '    $ %s <<EOF\n%s\n    EOF\n' "$(show "$@")" "$(printf '%s\n' "$input" | sed 's/^/    /')"
  if ! printf '%s\n' "$input" | "$@" 2>&1 | sed -u 's/^/      /'; then
    fail "this command failed: $(show "$@")"
  fi
}

# fail says what failed, prints the tail of the named processes' logs, and exits non-zero.
fail() {
  local msg=$1 name
  shift
  printf '\nmake demo FAILED: %s\n' "$msg" >&2
  for name in "$@"; do
    log_tail "$name" 40 >&2
  done
  printf '\nWhat the demo started and still runs is left up, for a look; logs are in .demo/logs/.\n' >&2
  printf 'Stop it all with: make demo-down\n' >&2
  exit 1
}

log_tail() {
  local name=$1 lines=$2
  local log=$LOGS/$name.log
  [ -f "$log" ] || return 0
  printf '\n---- last %d lines of %s ----\n' "$lines" "${log#"$ROOT"/}"
  tail -n "$lines" "$log"
  # A Kubernetes edge cluster's programs each have a log of their own.
  if [[ $name == cluster-* ]] && [ -d "$DEMO/${name#cluster-}" ]; then
    local f
    for f in "$DEMO/${name#cluster-}"/*.log; do
      [ -f "$f" ] || continue
      printf -- '---- last 10 lines of %s ----\n' "${f#"$ROOT"/}"
      tail -n 10 "$f"
    done
  fi
}

# ---- processes --------------------------------------------------------------------------------

# start_detached NAME COMMAND...: runs the command in a session of its own, detached from the
# terminal and from make, with its output in .demo/logs/NAME.log and its PID in .demo/pids/NAME.
start_detached() {
  local name=$1
  shift
  printf '    $ %s >.demo/logs/%s.log 2>&1 &\n' "$(show "$@")" "$name"
  # A background job of a script is not a process group leader, so setsid makes the session
  # without forking and $! is the command's own PID, which also names its process group.
  setsid nohup "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$PIDS/$name"
}

pid_of() { cat "$PIDS/$1" 2>/dev/null || true; }

# ours PID: the process lives and its command line names the demo's directory (a PID that was
# reused by another process does not).
ours() {
  local pid=$1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$DEMO/"
}

alive() { ours "$(pid_of "$1")"; }

started_names() {
  local f
  for f in "$PIDS"/*; do [ -f "$f" ] && basename "$f"; done
  return 0
}

# demo_processes lists the PIDs of all processes whose command line names the demo's directory.
demo_processes() {
  local d pid
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ "$pid" = "$$" ] && continue
    if tr '\0' ' ' 2>/dev/null <"$d/cmdline" | grep -qF "$DEMO/"; then echo "$pid"; fi
  done
  return 0
}

# stop_process NAME: SIGTERM to its process group, SIGKILL after 30 s.
stop_process() {
  local name=$1 pid i
  pid=$(pid_of "$name")
  ours "$pid" || return 0
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 60; i++)); do
    ours "$pid" || { info "stopped $name (pid $pid)"; return 0; }
    sleep 0.5
  done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  info "killed $name (pid $pid): it did not stop within 30 s of SIGTERM"
}

# ---- waiting ----------------------------------------------------------------------------------

# wait_for WHAT TIMEOUT "NAMES" CHECK...: runs CHECK every second until it succeeds. Fails the
# demo, with the logs of the processes NAMES, if one of them exits or TIMEOUT seconds pass.
wait_for() {
  local what=$1 timeout=$2 names=$3
  shift 3
  local start=$SECONDS out="" name
  info "waiting for $what"
  until out=$("$@" 2>&1); do
    for name in $names; do
      alive "$name" || fail "$name exited while waiting for $what" $names
    done
    if ((SECONDS - start >= timeout)); then
      fail "$what: not so after ${timeout}s; the last check said: ${out:-nothing}" $names
    fi
    sleep 1
  done
  info "... $what: done after $((SECONDS - start))s"
}

kcp_ready() { [ -f "$1" ] && kubectl --kubeconfig "$1" get --raw /readyz >/dev/null; }
http_ready() { curl -sf "http://127.0.0.1:$1/readyz"; }
file_exists() { [ -f "$1" ]; }

# ---- ports ------------------------------------------------------------------------------------

CHOSEN_PORTS=" "
# free_ports N: N consecutive ports, free a moment ago, below the ephemeral range (from which
# tests and clients get theirs), and not chosen before in this run.
free_ports() {
  local n=$1 low high base p ok tries
  read -r high _ </proc/sys/net/ipv4/ip_local_port_range
  low=20000
  ((high > low + 1000)) || high=60000
  for ((tries = 0; tries < 200; tries++)); do
    base=$((low + RANDOM % (high - low - n)))
    ok=1
    for ((p = base; p < base + n; p++)); do
      if [[ $CHOSEN_PORTS == *" $p "* ]] || (: <"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        ok=0
        break
      fi
    done
    if ((ok)); then
      for ((p = base; p < base + n; p++)); do CHOSEN_PORTS+="$p "; done
      echo "$base"
      return 0
    fi
  done
  echo "no $n consecutive free ports found between $low and $high" >&2
  return 1
}

url_of() { echo "$CENTER_URL/clusters/$1"; }

# ---- the steps of "up" ------------------------------------------------------------------------

preflight() {
  local b missing=()
  for b in kcp kubectl-ws kubectl-edge edge-controller-manager edge-syncer; do
    [ -x "$BIN/$b" ] || missing+=("bin/$b")
  done
  if [ "$SHARDS" -gt 1 ]; then
    for b in kcp-front-proxy cache-server; do
      [ -x "$BIN/$b" ] || missing+=("bin/$b")
    done
  fi
  if [ "$MODE" = kube ]; then
    for b in kube-apiserver kube-controller-manager kube-scheduler kwok; do
      [ -x "$BIN/$b" ] || missing+=("bin/$b")
    done
    command -v etcd >/dev/null || fail "DEMO_KUBE=1 needs etcd on the PATH: apt-get update && apt-get install -y etcd-server"
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    local kube=""
    [ "$MODE" = kube ] && kube="DEMO_KUBE=1 "
    [ "$SHARDS" -gt 1 ] && kube="${kube}SHARDS=$SHARDS "
    fail "missing ${missing[*]}: run '${kube}make demo-tools build' (make demo does)"
  fi
  command -v kubectl >/dev/null || fail "kubectl is not on the PATH"
  command -v curl >/dev/null || fail "curl is not on the PATH"
}

# guard_running makes sure no earlier demo runs: if all of it runs, it says so and exits; what is
# left of a broken one is stopped first.
guard_running() {
  [ -d "$PIDS" ] || return 0
  local names name up=() down=()
  names=$(started_names)
  for name in $names; do
    if alive "$name"; then up+=("$name"); else down+=("$name"); fi
  done
  if [ ${#up[@]} -gt 0 ] && [ ${#down[@]} -eq 0 ] && [ -f "$DEMO/env" ]; then
    load_env
    STEPS=1
    printf 'The demo is already up (started %s, edge clusters: %s); it is not started twice.\n' "$STARTED" "$MODE_TEXT"
    if [ "$MODE" != "$REQUESTED_MODE" ]; then
      printf 'It runs with other edge clusters than asked for: run make demo-down first.\n'
    fi
    show_fleet_status
    print_next_steps
    exit 0
  fi
  if [ ${#up[@]} -gt 0 ]; then
    printf 'The demo is partly up (%s exited): stopping what is left, to start again.\n' "${down[*]}"
  else
    printf 'A previous demo left its state behind, without processes: cleaning up.\n'
  fi
  down_quietly
  local left
  left=$(demo_processes)
  [ -z "$left" ] || fail "processes that name .demo/ are still running (pids $left): stop them first"
}

prepare_state() {
  # The logs of the run before stay, one run back, in .demo/logs.previous/.
  if [ -d "$LOGS" ]; then
    rm -rf "$DEMO/logs.previous"
    mv "$LOGS" "$DEMO/logs.previous"
  fi
  find "$DEMO" -mindepth 1 -maxdepth 1 ! -name logs.previous -exec rm -rf {} + 2>/dev/null || true
  mkdir -p "$LOGS" "$PIDS"
  CENTER_PORT=$(free_ports 3)
  EDGE_KCP_PORT=$(free_ports 3)
  ECM_PORT=$(free_ports 1)
  SYNCER_PORT=$(free_ports 3)
  STARTED=$(date '+%F %T')
  cat >"$DEMO/env" <<EOF
MODE=$MODE
SHARDS=$SHARDS
STARTED='$STARTED'
CENTER_PORT=$CENTER_PORT
EDGE_KCP_PORT=$EDGE_KCP_PORT
ECM_PORT=$ECM_PORT
SYNCER_PORT=$SYNCER_PORT
EOF
  load_env
}

load_env() {
  # shellcheck disable=SC1091
  . "$DEMO/env"
  if [ "$MODE" = kube ]; then
    MODE_TEXT="real Kubernetes clusters with a kwok node (DEMO_KUBE=1)"
  else
    MODE_TEXT="workspaces of a second kcp, API only"
  fi
  CENTER_URL=${CENTER_URL:-https://127.0.0.1:$CENTER_PORT}
  CENTER_TEXT="kcp (the center)"
  if [ "${SHARDS:-1}" -gt 1 ]; then
    CENTER_TEXT="a kcp of $SHARDS shards behind a front-proxy (the center, SHARDS=$SHARDS)"
  fi
}

start_servers() {
  step "Start $CENTER_TEXT and the three edge clusters ($MODE_TEXT)"
  # The center knows edge-controller-manager's user by a token, as an identity provider would, so
  # that the controllers need not run as kcp's admin (docs/operations.md).
  if [ "$SHARDS" -gt 1 ]; then
    # hack/sharded-center makes the token, and writes the kubeconfig once the center is usable.
    start_detached kcp "$BIN/sharded-center" --shards "$SHARDS" --dir "$DEMO/kcp" \
      --kubeconfig-out "$CENTER_KUBECONFIG" --controller-token-out "$DEMO/ecm.token"
  else
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DEMO/ecm.token"
    echo "$(cat "$DEMO/ecm.token"),edge-controller-manager,edge-controller-manager" >"$DEMO/tokens.csv"
    start_detached kcp kcp start --root-directory "$DEMO/kcp" --bind-address 127.0.0.1 \
      --secure-port "$CENTER_PORT" --embedded-etcd-client-port $((CENTER_PORT + 1)) \
      --embedded-etcd-peer-port $((CENTER_PORT + 2)) --token-auth-file "$DEMO/tokens.csv"
  fi
  if [ "$MODE" = kube ]; then
    local edge
    for edge in "${EDGES[@]}"; do
      start_detached "cluster-$edge" "$BIN/kube-cluster" --name "$edge" --dir "$DEMO/$edge" \
        --kubeconfig-out "$DEMO/$edge.kubeconfig"
    done
  else
    start_detached edge-kcp kcp start --root-directory "$DEMO/edge-kcp" --bind-address 127.0.0.1 \
      --secure-port "$EDGE_KCP_PORT" --embedded-etcd-client-port $((EDGE_KCP_PORT + 1)) \
      --embedded-etcd-peer-port $((EDGE_KCP_PORT + 2))
  fi
  if [ "$SHARDS" -gt 1 ]; then
    wait_for "the sharded center to serve (its kubeconfig written)" "$START_TIMEOUT" kcp file_exists "$CENTER_KUBECONFIG"
    # Everything reaches the center through the front-proxy, at the address its kubeconfig names.
    CENTER_URL=$(kubectl --kubeconfig "$CENTER_KUBECONFIG" config view --minify -o jsonpath='{.clusters[0].cluster.server}')
    CENTER_URL=${CENTER_URL%/clusters/*}
    echo "CENTER_URL=$CENTER_URL" >>"$DEMO/env"
  fi
  wait_for "kcp to serve at $CENTER_URL" "$START_TIMEOUT" kcp kcp_ready "$CENTER_KUBECONFIG"
  run cp "$CENTER_KUBECONFIG" "$USER_KUBECONFIG"
  export KUBECONFIG=$USER_KUBECONFIG
}

install_edge_mc() {
  step "Install edge-mc into kcp: the edge service provider workspace, an inventory and a workload workspace"
  run kubectl edge init --controller-token-file "$DEMO/ecm.token" --controller-kubeconfig "$ECM_KUBECONFIG"
  run kubectl edge ensure imw "$IMW"
  run kubectl edge ensure wmw "$WMW"
}

make_inventory() {
  step "Describe the three edge clusters in the inventory: a SyncTarget and a Location each, labelled by region"
  local edge
  for edge in "${EDGES[@]}"; do
    run kubectl edge ensure location "$edge" "region=${REGION[$edge]}" --imw "$IMW"
  done
}

start_controllers() {
  step "Start edge-controller-manager: mailbox controller, scheduler, placement translator, status summarizer"
  info "It runs as the kcp user edge-controller-manager, with only the rights kubectl edge init gave it,"
  info "and serves kcp an admission webhook on loopback that refuses status rules whose CEL does not compile."
  start_detached edge-controller-manager edge-controller-manager --kubeconfig "$ECM_KUBECONFIG" \
    --http-address "127.0.0.1:$ECM_PORT" --webhook-address 127.0.0.1:0 -v=2
  wait_for "edge-controller-manager to be ready (http://127.0.0.1:$ECM_PORT/readyz)" "$START_TIMEOUT" \
    "kcp edge-controller-manager" http_ready "$ECM_PORT"
}

make_edge_clusters() {
  step "Make the edge clusters ready: $MODE_TEXT"
  local edge
  if [ "$MODE" = kube ]; then
    for edge in "${EDGES[@]}"; do
      wait_for "Kubernetes cluster $edge" "$START_TIMEOUT" "cluster-$edge" file_exists "$DEMO/$edge.kubeconfig"
      run kubectl --kubeconfig "$DEMO/$edge.kubeconfig" get nodes
    done
    return
  fi
  wait_for "the edge kcp to serve on 127.0.0.1:$EDGE_KCP_PORT" "$START_TIMEOUT" edge-kcp kcp_ready "$EDGE_KCP_KUBECONFIG"
  info "Each edge cluster is a workspace of the edge kcp, with the CRDs of the Kubernetes workload"
  info "kinds (config/workload-crds), so that it serves Deployments as a Kubernetes cluster does."
  for edge in "${EDGES[@]}"; do
    run_input "apiVersion: tenancy.kcp.io/v1alpha1
kind: Workspace
metadata: {name: $edge}" kubectl --kubeconfig "$EDGE_KCP_KUBECONFIG" apply -f -
  done
  for edge in "${EDGES[@]}"; do
    run kubectl --kubeconfig "$EDGE_KCP_KUBECONFIG" wait --for=jsonpath='{.status.phase}'=Ready "workspace/$edge" --timeout=120s
    run cp "$EDGE_KCP_KUBECONFIG" "$DEMO/$edge.kubeconfig"
    run env KUBECONFIG="$DEMO/$edge.kubeconfig" kubectl ws ":root:$edge"
    run_brief kubectl --kubeconfig "$DEMO/$edge.kubeconfig" apply -f "$ROOT/config/workload-crds/"
    run_brief kubectl --kubeconfig "$DEMO/$edge.kubeconfig" wait --for=condition=Established crd --all --timeout=120s
  done
}

start_syncers() {
  step "Start a syncer for each edge cluster, with the mailbox credential from kubectl edge prep-for-syncer"
  local edge uid i=0
  for edge in "${EDGES[@]}"; do
    i=$((i + 1))
    run kubectl edge prep-for-syncer "$edge" --imw "$IMW" --kubeconfig-only --output-file "$DEMO/mailbox-$edge.kubeconfig"
    uid=$(kubectl --server "$(url_of "$IMW")" get synctarget "$edge" -o jsonpath='{.metadata.uid}')
    start_detached "syncer-$edge" edge-syncer --from-kubeconfig "$DEMO/mailbox-$edge.kubeconfig" \
      --to-kubeconfig "$DEMO/$edge.kubeconfig" --sync-target-name "$edge" --sync-target-uid "$uid" \
      --http-address "127.0.0.1:$((SYNCER_PORT + i - 1))"
  done
  for edge in "${EDGES[@]}"; do
    wait_for "the syncer of $edge to report in (SyncTarget condition SyncerReady)" "$CONVERGE_TIMEOUT" \
      "kcp syncer-$edge edge-controller-manager" syncer_ready "$edge"
  done
}

syncer_ready() {
  local got
  got=$(kubectl --server "$(url_of "$IMW")" get synctarget "$1" -o jsonpath='{.status.conditions[?(@.type=="SyncerReady")].status}')
  [ "$got" = True ] || { echo "SyncerReady is '${got}'"; return 1; }
}

place_workload() {
  step "Place the example workload: examples/quickstart/workload.yaml and placement.yaml, in $WMW"
  run kubectl --server "$(url_of "$WMW")" apply -f "$ROOT/examples/quickstart/workload.yaml"
  run kubectl --server "$(url_of "$WMW")" apply -f "$ROOT/examples/quickstart/placement.yaml"
  local edge
  for edge in "${SELECTED[@]}"; do
    if [ "$MODE" = kube ]; then
      wait_for "the workload to be Ready at $edge, as its syncer reports in the mailbox" "$CONVERGE_TIMEOUT" \
        "kcp edge-controller-manager syncer-$edge cluster-$edge" assemblage_ready "$edge"
    else
      wait_for "the workload to be applied at $edge" "$CONVERGE_TIMEOUT" \
        "kcp edge-kcp edge-controller-manager syncer-$edge" workload_at_edge "$edge"
    fi
  done
}

# workload_at_edge EDGE: the Deployment and the ConfigMap, customised for EDGE, are at the edge.
workload_at_edge() {
  local edge=$1 kc=$DEMO/$1.kubeconfig got
  got=$(kubectl --kubeconfig "$kc" get configmap hello-config -n "$NAMESPACE" -o jsonpath='{.data.region}') || return 1
  [ "$got" = "${REGION[$edge]}" ] || { echo "configmap hello-config has region '$got'"; return 1; }
  kubectl --kubeconfig "$kc" get deployment hello -n "$NAMESPACE" -o name
}

# assemblage_state EDGE: the placement's assemblage in the mailbox of EDGE, as its syncer reports
# it: "<version> <applied version> <pending> <applied> <ready> <failed>", empty if there is none.
assemblage_state() {
  local mailbox
  mailbox=$(kubectl --server "$(url_of "$IMW")" get synctarget "$1" -o jsonpath='{.status.mailboxWorkspace}' 2>/dev/null) || return 0
  [ -n "$mailbox" ] || return 0
  kubectl --server "$(url_of "$mailbox")" get assemblages -l "edge.kcp.io/placement=$PLACEMENT" \
    -o jsonpath='{range .items[*]}{.spec.version} {.status.appliedVersion} {.status.counts.pending} {.status.counts.applied} {.status.counts.ready} {.status.counts.failed}{"\n"}{end}' 2>/dev/null || true
}

# assemblage_ready EDGE: the syncer of EDGE applied the placement's current version and reports
# every object of it ready (the Deployment's replicas available, by kstatus).
assemblage_ready() {
  local version applied pending appl ready failed
  read -r version applied pending appl ready failed <<<"$(assemblage_state "$1")"
  [ -n "$version" ] && [ "$applied" = "$version" ] && [ "${pending:-1}" = 0 ] && [ "${appl:-1}" = 0 ] &&
    [ "${failed:-1}" = 0 ] && [ "${ready:-0}" -gt 0 ] || {
    echo "assemblage: ${version:-none yet}, applied ${applied:-none}, pending ${pending:-?} applied ${appl:-?} ready ${ready:-?} failed ${failed:-?}"
    return 1
  }
}

# ---- the fleet status -------------------------------------------------------------------------

# show_fleet_status prints where the example workload is and how it is doing.
#
# kubectl edge status prints the placement's summary; then, for each edge cluster, whether it is
# a destination, the placement's assemblage in its mailbox (with the state that its syncer reports
# from the edge), and what is at the edge itself. Everything the demo says about status is here.
show_fleet_status() {
  export KUBECONFIG=$USER_KUBECONFIG
  step "Fleet status of EdgePlacement $PLACEMENT"
  wait_for "the status summarizer to report $PLACEMENT applied at its destinations" 120 "kcp edge-controller-manager" summary_settled
  run kubectl edge status "$PLACEMENT" --wmw "$WMW"
  local destinations edge asm at_edge
  destinations=" $(kubectl --server "$(url_of "$WMW")" get singleplacementslices -l "edge.kcp.io/placement=$PLACEMENT" \
    -o jsonpath='{range .items[*].destinations[*]}{.syncTargetName}{" "}{end}') "
  # On a sharded center, a column names the shard that holds each edge cluster's mailbox, as
  # kubectl edge status --target does.
  local shard_col="" shard_head="" shard=""
  if [ "${SHARDS:-1}" -gt 1 ]; then
    shard_col="%-14s"
    shard_head="MAILBOX SHARD"
  fi
  local fmt="    %-8s %-7s %-12s $shard_col%-34s %s\n"
  # shellcheck disable=SC2059 # the format is built above
  printf "\n$fmt" "EDGE" "REGION" "DESTINATION" ${shard_col:+"$shard_head"} "ASSEMBLAGE (in the mailbox)" "AT THE EDGE (namespace $NAMESPACE)"
  for edge in "${EDGES[@]}"; do
    asm=$(assemblage_summary "$edge")
    at_edge=$(edge_contents "$edge")
    local is_dest=no
    [[ $destinations == *" $edge "* ]] && is_dest=yes
    if [ -n "$shard_col" ]; then
      shard=$(kubectl edge status --target "$edge" --imw "$IMW" -o yaml 2>/dev/null | sed -n 's/^shard: //p')
      shard=${shard:-?}
    fi
    # shellcheck disable=SC2059 # the format is built above
    printf "$fmt" "$edge" "${REGION[$edge]}" "$is_dest" ${shard_col:+"$shard"} "$asm" "$at_edge"
  done
  if [ "$MODE" != kube ]; then
    info ""
    info "These edge clusters are API only: they hold what the syncers apply, and nothing runs"
    info "pods there, so no Deployment becomes Ready and no status comes back. DEMO_KUBE=1 make demo"
    info "runs real Kubernetes clusters instead, whose Deployments become Ready and report it."
  fi
  info ""
  info "Again: hack/demo.sh status. Watch it: kubectl edge status $PLACEMENT --wmw $WMW -w"
  info "Per edge cluster: kubectl edge status --target edge-1 --imw $IMW"
  info "In a browser, live: kubectl edge dashboard --wmw $WMW --imw $IMW (on 127.0.0.1; it prints the URL)"
}

# summary_settled: the placement's summary counts every destination, none of them pending.
summary_settled() {
  local counts
  counts=$(kubectl --server "$(url_of "$WMW")" get edgeplacement "$PLACEMENT" \
    -o jsonpath='{.status.matchingSyncTargetCount} {.status.summary.pending} {.status.summary.applied} {.status.summary.ready}') || return 1
  local n pending applied ready
  read -r n pending applied ready <<<"$counts"
  [ -n "$ready" ] && [ "${n:-0}" -gt 0 ] && [ "$pending" = 0 ] && [ $((applied + ready)) -eq "$n" ] || {
    echo "summary: ${counts:-none yet}"
    return 1
  }
}

# assemblage_summary EDGE: one line on the placement's assemblage in the mailbox of EDGE.
assemblage_summary() {
  local version applied pending appl ready failed
  read -r version applied pending appl ready failed <<<"$(assemblage_state "$1")"
  if [ -z "$version" ]; then
    echo "-"
  elif [ "$applied" != "$version" ]; then
    echo "${version:0:8}, not applied yet"
  elif [ "${failed:-0}" != 0 ]; then
    echo "${version:0:8}: $failed failed (kubectl edge status --target $1)"
  else
    echo "${version:0:8}: ${ready:-0} ready, ${appl:-0} applied"
  fi
}

# edge_contents EDGE: what of the workload is at the edge cluster.
edge_contents() {
  local kc=$DEMO/$1.kubeconfig region deployment
  if ! kubectl --kubeconfig "$kc" get namespace "$NAMESPACE" >/dev/null 2>&1; then
    echo "nothing"
    return
  fi
  region=$(kubectl --kubeconfig "$kc" get configmap hello-config -n "$NAMESPACE" -o jsonpath='{.data.region}' 2>/dev/null || echo "(absent)")
  if [ "$MODE" = kube ]; then
    deployment=$(kubectl --kubeconfig "$kc" get deployment hello -n "$NAMESPACE" \
      -o jsonpath='{.status.readyReplicas}/{.spec.replicas} ready' 2>/dev/null || echo "absent")
    deployment=${deployment#/}
    [[ $deployment == /* ]] && deployment="0$deployment"
  else
    deployment=$(kubectl --kubeconfig "$kc" get deployment hello -n "$NAMESPACE" -o jsonpath='{.spec.replicas} replicas, no status' 2>/dev/null || echo "absent")
  fi
  echo "deployment hello: $deployment; configmap hello-config: region=$region"
}

print_next_steps() {
  cat <<EOF

==> The demo is up and stays up: look around, in this shell or another one.
    export PATH=\$PWD/bin:\$PATH KUBECONFIG=\$PWD/.demo/kubeconfig
    kubectl ws :root:wmw                    # the workload workspace
    kubectl get edgeplacements,deployments,configmaps,customizers -A
    kubectl ws :root:imw                    # the inventory workspace
    kubectl get locations,synctargets -o wide
    kubectl --kubeconfig .demo/edge-1.kubeconfig get deployments,configmaps -n hello   # an edge cluster
    kubectl edge dashboard --wmw $WMW --imw $IMW   # the fleet in a browser, live: open the URL it prints
    Logs: .demo/logs/   Walk-through: docs/quickstart.md
    Stop everything: make demo-down
EOF
}

# ---- commands ---------------------------------------------------------------------------------

up() {
  REQUESTED_MODE=logical
  [ "${DEMO_KUBE:-}" = 1 ] && REQUESTED_MODE=kube
  MODE=$REQUESTED_MODE
  SHARDS=${SHARDS:-1}
  [[ $SHARDS =~ ^[0-9]+$ ]] && [ "$SHARDS" -ge 1 ] || fail "SHARDS=$SHARDS: give the number of kcp shards of the center, 1 (the default) or more"
  preflight
  guard_running
  if [ "$SHARDS" -gt 1 ]; then
    info ">> building hack/sharded-center into bin/ (it runs the sharded center)"
    (cd "$ROOT" && go build -o "$BIN/sharded-center" ./hack/sharded-center) || fail "building hack/sharded-center failed"
  fi
  if [ "$MODE" = kube ]; then
    info ">> building hack/kube-cluster into bin/ (it runs the Kubernetes edge clusters)"
    (cd "$ROOT" && go build -o "$BIN/kube-cluster" ./hack/kube-cluster) || fail "building hack/kube-cluster failed"
  fi
  prepare_state
  local start=$SECONDS
  printf 'Starting the edge-mc demo in .demo/ (ports %s-%s and others; logs in .demo/logs/)\n' "$CENTER_PORT" $((CENTER_PORT + 2))
  start_servers
  install_edge_mc
  make_inventory
  start_controllers
  make_edge_clusters
  start_syncers
  place_workload
  show_fleet_status
  info ""
  info "Up in $((SECONDS - start))s."
  print_next_steps
}

status() {
  [ -f "$DEMO/env" ] || { echo "The demo is not up: make demo"; exit 1; }
  load_env
  STEPS=1
  show_fleet_status
}

# down_quietly stops every process the demo started and removes its state but the logs.
down_quietly() {
  local name pid
  # Syncers and controllers first, so that they do not log the servers going away.
  for name in $(started_names | grep '^syncer-') edge-controller-manager $(started_names | grep -v '^syncer-' | grep -vx 'edge-controller-manager\|kcp') kcp; do
    stop_process "$name"
  done
  # Keep the logs of the Kubernetes edge clusters' programs with the others.
  local edge f
  for edge in "${EDGES[@]}"; do
    for f in "$DEMO/$edge"/*.log; do
      [ -f "$f" ] || continue
      mkdir -p "$LOGS/$edge"
      mv "$f" "$LOGS/$edge/"
    done
  done
  if [ -d "$DEMO" ]; then
    find "$DEMO" -mindepth 1 -maxdepth 1 ! -name logs ! -name logs.previous -exec rm -rf {} +
  fi
}

down() {
  if [ ! -d "$PIDS" ] && [ -z "$(demo_processes)" ]; then
    echo "The demo is not up; nothing to stop."
    return
  fi
  echo "Stopping the edge-mc demo"
  down_quietly
  local left
  left=$(demo_processes)
  if [ -n "$left" ]; then
    echo "Processes that name .demo/ in their command line are still running:" >&2
    ps -o pid,args -p "$(echo $left | tr ' ' ',')" >&2 || true
    exit 1
  fi
  echo "Nothing of the demo runs any more (no process names .demo/); its logs are kept in .demo/logs/."
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
*)
  echo "usage: hack/demo.sh up|status|down (see make demo, make demo-down)" >&2
  exit 2
  ;;
esac
