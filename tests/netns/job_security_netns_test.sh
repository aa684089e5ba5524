#!/usr/bin/env bash
# Several machines on a real network, as separate hosts: each process in a network namespace
# of its own with its own address, joined by veth pairs (rank 0's host has two links: one to
# rank 1's host, one to a stranger's). Checks, with real pe-actor-run processes:
#  - a stranger with a wrong token, one with none, and one sending random bytes are refused
#    (exit 2, a clear error) and rank 0 trains on with its own rank 1;
#  - rank 1's recorded join, replayed by the stranger, is refused (a used challenge), and
#    the job trains;
#  - a job across hosts without a token warns what that allows, and one on 127.0.0.1
#    listens on loopback only;
#  - a capture on rank 1's link (tcpdump) of a job without TLS holds plaintext of a parameter
#    tensor that crossed it, and a capture of the same job over mutual TLS holds none; a
#    process with the token but a certificate of another CA cannot join the TLS job.
# Usage: job_security_netns_test.sh PE_ACTOR_RUN   (exit 77: skipped, needs root, ip, tcpdump)
set -uo pipefail

run_binary=${1:?usage: $0 PE_ACTOR_RUN}
if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null || ! command -v tcpdump >/dev/null ||
   ! command -v openssl >/dev/null || ! mountpoint -q /; then
  # `ip netns exec` remounts /sys, which needs / to be a mount point: not so in a plain chroot
  # (scripts/fresh_root.sh binds its root onto itself for this). CI installs and provides all
  # of these, so there a skip would hide a broken set-up: it fails instead.
  why="needs root, ip (iproute2), tcpdump, openssl (scripts/install_deps.sh) and / as a mount point"
  if [[ ${CI:-} == true ]]; then echo "FAIL: CI=true but this test cannot run: $why"; exit 1; fi
  echo "skipped: $why"
  exit 77
fi

tag="pe$$"
host0="$tag-h0" host1="$tag-h1" stranger="$tag-hs"
work=$(mktemp -d /tmp/pe-netns-XXXXXX)
pids=()
failures=0

cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  wait 2>/dev/null
  for ns in "$host0" "$host1" "$stranger"; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# Waits (up to 10 s) until the capture file FILE has not grown for a second: tcpdump has
# written what the kernel gave it (a tcpdump stopped sooner on a busy machine loses the last
# packets, the ones with the last step's parameters).
settle() {
  local size=-1
  for _ in $(seq 10); do
    local now
    now=$(stat -c %s "$1" 2>/dev/null || echo 0)
    [[ $now -eq $size ]] && return
    size=$now
    sleep 1
  done
}

# --- the hosts --------------------------------------------------------------------------
for ns in "$host0" "$host1" "$stranger"; do
  ip netns add "$ns" || { echo "cannot make network namespace $ns"; exit 1; }
  ip -n "$ns" link set lo up
done
ip link add "$tag-a0" type veth peer name "$tag-a1"
ip link set "$tag-a0" netns "$host0"; ip link set "$tag-a1" netns "$host1"
ip link add "$tag-b0" type veth peer name "$tag-b1"
ip link set "$tag-b0" netns "$host0"; ip link set "$tag-b1" netns "$stranger"
ip -n "$host0" addr add 10.77.1.1/24 dev "$tag-a0"; ip -n "$host0" link set "$tag-a0" up
ip -n "$host1" addr add 10.77.1.2/24 dev "$tag-a1"; ip -n "$host1" link set "$tag-a1" up
ip -n "$host0" addr add 10.77.2.1/24 dev "$tag-b0"; ip -n "$host0" link set "$tag-b0" up
ip -n "$stranger" addr add 10.77.2.2/24 dev "$tag-b1"; ip -n "$stranger" link set "$tag-b1" up

port=29517
train=(--model mlp --hidden 64 --places cpu:1 --batch-size 64 --nnodes 2 --peer-timeout 5)

# A pe-actor-run in namespace $1, bounded in time; the rest are its flags. Each with a
# /dev/shm of its own, as on a host of its own (`ip netns exec` gives it a mount namespace
# whose mounts do not reach ours): the default backend cannot share memory across hosts.
# SHM_SIZE: that /dev/shm's size (64m unless set).
on() {
  local ns=$1; shift
  timeout 120 ip netns exec "$ns" sh -c 'mount -t tmpfs -o "size=$0" pe-host-shm /dev/shm && exec "$@"' \
    "${SHM_SIZE:-64m}" "$run_binary" "$@"
}

umask 077
openssl rand -hex 32 > "$work/token"
openssl rand -hex 32 > "$work/wrong"

# --- admission ----------------------------------------------------------------------------
on "$host0" "${train[@]}" --steps 5 --node-rank 0 --master 10.77.1.1:$port \
  --job-token-file "$work/token" > "$work/r0.out" 2> "$work/r0.err" &
pids+=($!); master=$!
sleep 1
on "$stranger" "${train[@]}" --steps 5 --node-rank 1 --master 10.77.2.1:$port \
  --job-token-file "$work/wrong" > "$work/s1.out" 2> "$work/s1.err"
status=$?
if [[ $status -eq 2 ]] && grep -q "did not prove that it holds the job token" "$work/s1.err"; then
  pass "a stranger with a wrong token is refused"
else fail "a stranger with a wrong token: exit $status, $(cat "$work/s1.err")"; fi
on "$stranger" "${train[@]}" --steps 5 --node-rank 1 --master 10.77.2.1:$port > "$work/s2.out" 2> "$work/s2.err"
status=$?
if [[ $status -eq 2 ]] && grep -q "admits only processes holding the job's token" "$work/s2.err"; then
  pass "a stranger without a token is refused"
else fail "a stranger without a token: exit $status, $(cat "$work/s2.err")"; fi
ip netns exec "$stranger" python3 - <<'PY' || fail "could not knock with random bytes"
import os, socket
for _ in range(20):
    s = socket.create_connection(("10.77.2.1", 29517), timeout=5)
    s.sendall(os.urandom(4096))
    s.close()
PY
on "$host1" "${train[@]}" --steps 5 --node-rank 1 --master 10.77.1.1:$port \
  --job-token-file "$work/token" > "$work/r1.out" 2> "$work/r1.err"
status1=$?
wait "$master"; status0=$?
if [[ $status0 -eq 0 && $status1 -eq 0 ]] && grep -q "trained 5 steps" "$work/r0.out" &&
   [[ $(grep -c "refused a process claiming rank 1" "$work/r0.err") -ge 2 ]]; then
  pass "rank 0 said so, and trained with its own rank 1 after the strangers"
else fail "the job after the strangers: exit $status0/$status1; $(cat "$work/r0.err" "$work/r1.err")"; fi

# --- a replayed handshake ------------------------------------------------------------------
# A job of 3: rank 1 joins from its host while a capture records its link; then the stranger
# sends rank 1's recorded bytes to rank 0 on a connection of its own, as an eavesdropper
# would. CAF takes them (rank 1's node, rank 1's hello), and the admission refuses them: the
# challenge they answer was used. Rank 2 then joins, and the job trains.
rport=$((port + 4))
ip netns exec "$host1" timeout 60 tcpdump -i "$tag-a1" -U -s 0 -w "$work/join.pcap" "tcp dst port $rport" \
  2> "$work/join.tcpdump" &
dump=$!; pids+=($dump)
for _ in $(seq 100); do grep -qs "listening on" "$work/join.tcpdump" && break; sleep 0.1; done
three=(--model mlp --hidden 8 --places cpu:1 --batch-size 64 --nnodes 3 --steps 2 --job-token-file "$work/token")
on "$host0" "${three[@]}" --node-rank 0 --master 10.77.1.1:$rport > "$work/p0.out" 2> "$work/p0.err" &
pids+=($!); p0=$!
sleep 0.5
on "$host1" "${three[@]}" --node-rank 1 --master 10.77.1.1:$rport > "$work/p1.out" 2> "$work/p1.err" &
pids+=($!); p1=$!
# Until rank 1's hello is in the capture (its process may take seconds to start on a busy
# machine), then until the capture settles.
for _ in $(seq 300); do [[ $(stat -c %s "$work/join.pcap" 2>/dev/null || echo 0) -gt 2000 ]] && break; sleep 0.1; done
settle "$work/join.pcap"
kill -INT "$dump"; wait "$dump"
ip netns exec "$stranger" python3 - "$work/join.pcap" "$rport" <<'PY' || fail "could not replay the recorded join"
import socket, struct, sys, time
data, port = open(sys.argv[1], "rb").read(), int(sys.argv[2])
segments, at = {}, 24
while at + 16 <= len(data):  # pcap records of Ethernet frames: IPv4, TCP, payload by seq
    length = struct.unpack("<I", data[at + 8:at + 12])[0]
    frame = data[at + 16:at + 16 + length]
    at += 16 + length
    ip = frame[14:]
    if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
        continue
    tcp = ip[(ip[0] & 15) * 4:]
    dport, seq = struct.unpack(">H", tcp[2:4])[0], struct.unpack(">I", tcp[4:8])[0]
    payload = tcp[(tcp[12] >> 4) * 4:]
    if dport == port and payload:
        segments[seq] = payload
recorded = b"".join(segments[k] for k in sorted(segments))
if not recorded:
    sys.exit("nothing recorded")
s = socket.create_connection(("10.77.2.1", port), timeout=5)
s.sendall(recorded)
time.sleep(2)
s.close()
PY
on "$host1" "${three[@]}" --node-rank 2 --master 10.77.1.1:$rport > "$work/p2.out" 2> "$work/p2.err"
status2=$?
wait "$p1"; status1=$?
wait "$p0"; status0=$?
if grep -q "its hello answers a challenge rank 0 did not issue or that was already used (a replayed hello)" "$work/p0.err"; then
  pass "a replayed handshake is refused"
else fail "no refusal of the replayed handshake: $(cat "$work/p0.err")"; fi
if [[ $status0 -eq 0 && $status1 -eq 0 && $status2 -eq 0 ]] && grep -q "trained 2 steps" "$work/p0.out"; then
  pass "the job of 3 trained after the replay"
else fail "the job after the replay: exit $status0/$status1/$status2; $(cat "$work/p0.err" "$work/p1.err" "$work/p2.err")"; fi

# --- a job on 127.0.0.1 is not reachable from another host ---------------------------------
lport=$((port + 5))
on "$host0" "${train[@]}" --steps 2 --node-rank 0 --master 127.0.0.1:$lport \
  > "$work/l0.out" 2> "$work/l0.err" &
pids+=($!); local_master=$!
for _ in $(seq 300); do ip netns exec "$host0" ss -ltn 2>/dev/null | grep -q ":$lport " && break; sleep 0.1; done
listening=$(ip netns exec "$host0" ss -ltn 2>/dev/null | grep ":$lport " | awk '{print $4}')
if ip netns exec "$host1" python3 -c "import socket; socket.create_connection(('10.77.1.1', $lport), timeout=3)" 2>/dev/null; then
  fail "a job whose master is 127.0.0.1 accepted a connection from another host (listening on $listening)"
elif [[ $listening == "127.0.0.1:$lport" ]]; then
  pass "a job on 127.0.0.1 listens on loopback only"
else fail "a job on 127.0.0.1 listens on '$listening'"; fi
kill "$local_master" 2>/dev/null; wait "$local_master" 2>/dev/null

# --- an open job across hosts warns -------------------------------------------------------
on "$host0" "${train[@]}" --steps 2 --node-rank 0 --master 10.77.1.1:$((port + 1)) > "$work/o0.out" 2> "$work/o0.err" &
pids+=($!); master=$!
on "$host1" "${train[@]}" --steps 2 --node-rank 1 --master 10.77.1.1:$((port + 1)) > "$work/o1.out" 2> "$work/o1.err"
wait "$master"
if grep -q "this job has no job token: any process that can reach 10.77.1.1" "$work/o0.err"; then
  pass "an open job across hosts warns"
else fail "no warning for an open job: $(cat "$work/o0.err")"; fi
if grep -q "trained 2 steps" "$work/o0.out" &&
   grep -q "the collectives go over CAF, not shared memory: process rank 1: cannot open the shared memory segment" "$work/o0.err" &&
   ! grep -q "not shared memory" "$work/o1.err"; then
  pass "across hosts the default backend found no shared memory, rank 0 said so once, and the job trained over CAF"
else fail "the default backend across hosts: $(cat "$work/o0.out" "$work/o0.err" "$work/o1.err")"; fi

# --- a /dev/shm too small for the segment -------------------------------------------------
# Rank 0 cannot allocate the default backend's segment (2 x 2 x 4 MiB and more) in 1 MiB:
# it says why, and both processes train over CAF instead of failing mid-step.
sport=$((port + 6))
SHM_SIZE=1m on "$host0" "${train[@]}" --steps 2 --node-rank 0 --master 127.0.0.1:$sport > "$work/m0.out" 2> "$work/m0.err" &
pids+=($!); small=$!
SHM_SIZE=1m on "$host0" "${train[@]}" --steps 2 --node-rank 1 --master 127.0.0.1:$sport > "$work/m1.out" 2> "$work/m1.err"
status1=$?
wait "$small"; status0=$?
if [[ $status0 -eq 0 && $status1 -eq 0 ]] && grep -q "trained 2 steps" "$work/m0.out" &&
   grep -q "not shared memory: process rank 0: cannot allocate .* (is /dev/shm large enough?)" "$work/m0.err"; then
  pass "a /dev/shm too small for the segment: rank 0 said so and the job trained over CAF"
else fail "a /dev/shm too small: exit $status0/$status1; $(cat "$work/m0.err" "$work/m1.err")"; fi

# --- what a capture on rank 1's link shows ------------------------------------------------
# Rank 0 and rank 1 in --reduce reduce mode broadcast the updated parameters every step, so
# the last step's values, which rank 0 saves, crossed the link.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -subj /CN=job-ca \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -subj /CN=other-ca \
  -keyout "$work/other-ca.key" -out "$work/other-ca.pem" 2>/dev/null
for r in 0 1 s; do
  ca=ca; [[ $r == s ]] && ca=other-ca
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=rank$r \
    -keyout "$work/rank$r.key" -out "$work/rank$r.csr" 2>/dev/null
  openssl x509 -req -days 30 -in "$work/rank$r.csr" -CA "$work/$ca.pem" -CAkey "$work/$ca.key" \
    -CAcreateserial -out "$work/rank$r.pem" 2>/dev/null
done

# capture NAME PORT [FLAGS...]: a job of 4 steps, captured on rank 1's link; its checkpoint in
# $work/NAME.ckpt, the capture in $work/NAME.pcap.
capture() {
  local name=$1 p=$2; shift 2
  local tls0=() tls1=()
  if [[ ${1:-} == tls ]]; then
    tls0=(--tls-cert "$work/rank0.pem" --tls-key "$work/rank0.key" --tls-ca "$work/ca.pem")
    tls1=(--tls-cert "$work/rank1.pem" --tls-key "$work/rank1.key" --tls-ca "$work/ca.pem")
  fi
  ip netns exec "$host1" timeout 150 tcpdump -i "$tag-a1" -B 65536 -U -s 0 -w "$work/$name.pcap" tcp 2> "$work/$name.tcpdump" &
  local dump=$!
  pids+=($dump)
  for _ in $(seq 100); do grep -qs "listening on" "$work/$name.tcpdump" && break; sleep 0.1; done
  on "$host0" "${train[@]}" --steps 4 --reduce reduce --node-rank 0 --master 10.77.1.1:$p \
    --job-token-file "$work/token" "${tls0[@]}" --save-params "$work/$name.ckpt" > "$work/$name.0.out" 2> "$work/$name.0.err" &
  local master=$!
  pids+=($master)
  local intruder=""
  if [[ ${#tls0[@]} -gt 0 ]]; then
    # A stranger with the token but a certificate of another CA, before rank 1: it cannot
    # join (its TLS handshakes fail, for up to the 60 s join timeout) and the job trains.
    sleep 0.5
    on "$stranger" "${train[@]}" --steps 4 --reduce reduce --node-rank 1 --master 10.77.2.1:$p \
      --job-token-file "$work/token" --tls-cert "$work/ranks.pem" --tls-key "$work/ranks.key" \
      --tls-ca "$work/other-ca.pem" > "$work/$name.s.out" 2> "$work/$name.s.err" &
    intruder=$!
    pids+=($intruder)
    sleep 1
  fi
  on "$host1" "${train[@]}" --steps 4 --reduce reduce --node-rank 1 --master 10.77.1.1:$p \
    --job-token-file "$work/token" "${tls1[@]}" > "$work/$name.1.out" 2> "$work/$name.1.err"
  local s1=$? s0=0
  wait "$master" || s0=$?
  settle "$work/$name.pcap"
  kill -INT "$dump"; wait "$dump"
  [[ $s0 -eq 0 && $s1 -eq 0 ]] || fail "the $name job: exit $s0/$s1; $(cat "$work/$name.0.err" "$work/$name.1.err")"
  if [[ -n $intruder ]]; then
    local si=0
    wait "$intruder" || si=$?
    if [[ $si -eq 2 ]] && grep -q "cannot reach the master at 10.77.2.1:$p.*with TLS" "$work/$name.s.err"; then
      pass "a process whose certificate another CA signed cannot join the TLS job"
    else fail "the other CA's process: exit $si; $(cat "$work/$name.s.err")"; fi
  fi
}

# How many 64-byte pieces of the saved fc_0.w_0 (its last 16 KiB of float32 values) appear in
# the capture.
plaintext_pieces() {
  python3 - "$work/$1.ckpt/fc_0.w_0" "$work/$1.pcap" <<'PY'
import sys
weights = open(sys.argv[1], "rb").read()[-16384:]
capture = open(sys.argv[2], "rb").read()
print(sum(1 for k in range(0, len(weights) - 64, 64) if weights[k:k + 64] in capture))
PY
}

capture plain $((port + 2))
capture tls $((port + 3)) tls
plain=$(plaintext_pieces plain)
tls=$(plaintext_pieces tls)
plain_bytes=$(stat -c %s "$work/plain.pcap")
tls_bytes=$(stat -c %s "$work/tls.pcap")
echo "captured $plain_bytes bytes without TLS, $tls_bytes with; pieces of fc_0.w_0 found: $plain of 255 without, $tls with"
if [[ $plain -gt 0 ]]; then pass "without TLS, the capture holds the parameter tensor in clear"
else fail "the capture without TLS holds no piece of fc_0.w_0: the check cannot see plaintext ($(cat "$work/plain.tcpdump"))"; fi
if [[ $tls -eq 0 && $tls_bytes -gt 100000 ]]; then pass "over TLS, the capture holds none of it"
else fail "over TLS: $tls pieces found in a capture of $tls_bytes bytes"; fi
if grep -q "trained 4 steps" "$work/tls.0.out"; then pass "the job over TLS trained"
else fail "the job over TLS: $(cat "$work/tls.0.out" "$work/tls.0.err")"; fi

[[ $failures -eq 0 ]] && echo "all passed" || echo "$failures failed"
exit $(( failures > 0 ))
