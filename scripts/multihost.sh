#!/usr/bin/env bash
# Emulated hosts for multi-host runs on one machine: each host is a Linux network namespace (shoal-h1, shoal-h2, ...)
# with its own address on a veth link and, for the processes MPI starts in it, its own host name (a UTS namespace).
# Traffic between hosts goes over the veth link only: the namespaces have no route anywhere else.
#
#   scripts/multihost.sh up [HOSTS]        create HOSTS emulated hosts (default 2), removing stale ones first
#   scripts/multihost.sh down              remove every emulated host this script made
#   scripts/multihost.sh check             exit 0 if this machine can make namespaces (root / CAP_NET_ADMIN)
#   scripts/multihost.sh run [-n N] MPIEXEC PROGRAM [ARGS...]
#                                          run PROGRAM on N ranks (default 2 per host) spread evenly over the hosts,
#                                          with MPIEXEC (Open MPI's or MPICH's), started inside the first host
#
# SHOAL_HOSTS (default 2) is the number of hosts `run` spreads over. Needs root (or CAP_NET_ADMIN + CAP_SYS_ADMIN).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
prefix=shoal-h
subnet=198.18.77       # RFC 2544's benchmarking range: never routed, and only ever on the veth link made here
agent=$here/multihost/agent

die() { echo "shoal multihost: $*" >&2; exit 2; }

can_make_namespaces() {
  [ "$(id -u)" -eq 0 ] || return 1
  command -v ip >/dev/null && command -v unshare >/dev/null || return 1
  ip netns add shoal-probe 2>/dev/null || return 1
  ip netns delete shoal-probe
}

existing_hosts() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${prefix}[0-9]+$" || true; }

down() {
  local h
  for h in $(existing_hosts); do
    ip netns pids "$h" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns delete "$h" 2>/dev/null
    rm -rf "/etc/netns/$h"
  done
  ip link delete shoal-br 2>/dev/null || true
  rm -rf /etc/netns/shoal-probe
  return 0
}

up() {
  local n=${1:-2} i h
  [ "$n" -ge 2 ] && [ "$n" -le 9 ] || die "up: the number of hosts must be 2..9, not '$n'"
  can_make_namespaces || die "cannot create network namespaces here (needs root or CAP_NET_ADMIN, and iproute2)"
  down
  local hosts_file
  hosts_file=$(mktemp)
  printf '127.0.0.1 localhost\n::1 localhost\n' >"$hosts_file"
  for i in $(seq 1 "$n"); do printf '%s.%d %s%d\n' "$subnet" "$i" "$prefix" "$i" >>"$hosts_file"; done
  for i in $(seq 1 "$n"); do
    h=$prefix$i
    ip netns add "$h" || die "ip netns add $h failed"
    ip -n "$h" link set lo up
    mkdir -p "/etc/netns/$h"
    cp "$hosts_file" "/etc/netns/$h/hosts"
    echo "$h" >"/etc/netns/$h/hostname"
  done
  rm -f "$hosts_file"
  # Host 1 holds a bridge; every other host is joined to it by a veth pair (both ends inside namespaces).
  ip -n "${prefix}1" link add shoal-br type bridge
  ip -n "${prefix}1" link set shoal-br up
  ip -n "${prefix}1" addr add "$subnet.1/24" dev shoal-br
  for i in $(seq 2 "$n"); do
    h=$prefix$i
    ip link add "shoal-v$i" netns "${prefix}1" type veth peer name eth0 netns "$h" || die "veth for $h failed"
    ip -n "${prefix}1" link set "shoal-v$i" master shoal-br
    ip -n "${prefix}1" link set "shoal-v$i" up
    ip -n "$h" addr add "$subnet.$i/24" dev eth0
    ip -n "$h" link set eth0 up
  done
  for i in $(seq 2 "$n"); do
    ip netns exec "${prefix}1" ping -c 1 -W 2 "$subnet.$i" >/dev/null 2>&1 ||
      ip netns exec "${prefix}1" bash -c "exec 3<>/dev/tcp/$subnet.$i/1" 2>/dev/null
  done
  echo "shoal multihost: $n hosts up (${prefix}1..${prefix}$n on $subnet.0/24)" >&2
}

# run [-n N] MPIEXEC PROGRAM ARGS...
run() {
  local np="" hosts=${SHOAL_HOSTS:-2}
  if [ "${1:-}" = "-n" ]; then np=$2; shift 2; fi
  [ $# -ge 2 ] || die "run: usage: run [-n N] MPIEXEC PROGRAM [ARGS...]"
  local mpiexec=$1; shift
  [ -n "$np" ] || np=$((2 * hosts))
  [ -n "$(existing_hosts)" ] || die "no emulated hosts: run 'scripts/multihost.sh up' first"
  # Ranks per host: as even as possible, the first hosts taking the remainder.
  local spec="" i per
  for i in $(seq 1 "$hosts"); do
    per=$(( np / hosts + (i <= np % hosts ? 1 : 0) ))
    [ "$per" -gt 0 ] || continue
    spec+="${spec:+,}$prefix$i:$per"
  done
  local cmd
  if "$mpiexec" --version 2>&1 | grep -q "Open MPI\|OpenRTE"; then
    # Only the transport is chosen (TCP on the hosts' link, shared memory within a host); everything else is Open
    # MPI's default, one-sided components included. Binding is off: each host's daemon would bind its first rank to
    # core 0, and emulated hosts share this machine's cores, so every host's rank 0 would share one core (an 8 ms
    # ping-pong instead of 35 us).
    cmd=("$mpiexec" --host "$spec" --mca plm_rsh_agent "$agent" --bind-to none
         --mca btl tcp,vader,self --mca pml ob1
         --mca btl_tcp_if_include "$subnet.0/24" --mca oob_tcp_if_include "$subnet.0/24"
         -np "$np" "$@")
  else
    # MPICH (hydra): the ssh launcher through the agent. UCX, under MPICH, sees one machine (the emulated hosts
    # share the kernel) and may carry bytes between hosts through shared memory. Restricting it to TCP
    # (UCX_TLS=tcp,self) is what an honest network would be, but Debian's UCX then often hangs in MPI_Finalize
    # (2 runs in 8 at 2 hosts x 1 rank, most at 2 x 2 here), even for a program that only calls MPI_Init,
    # MPI_Barrier and MPI_Finalize: its TCP transport stops progress too early at cleanup (openucx/ucx#8738). So
    # the default keeps UCX's shared memory (UCX_TLS=tcp,sm,self); shoal still sees two hosts (MPI_COMM_TYPE_SHARED
    # groups by host name) and takes its cross-host paths. UCX_TLS=tcp,self measures over TCP (docs/multihost.md).
    cmd=(env UCX_TLS="${UCX_TLS:-tcp,sm,self}"
         "$mpiexec" -launcher ssh -launcher-exec "$agent" -hosts "$spec" -np "$np" "$@")
  fi
  exec ip netns exec "${prefix}1" unshare --uts sh -c "hostname ${prefix}1 && exec \"\$@\"" sh "${cmd[@]}"
}

case ${1:-} in
  up) shift; up "$@" ;;
  down) down ;;
  check) can_make_namespaces ;;
  run) shift; run "$@" ;;
  *) die "usage: scripts/multihost.sh up [HOSTS] | down | check | run [-n N] MPIEXEC PROGRAM [ARGS...]" ;;
esac
