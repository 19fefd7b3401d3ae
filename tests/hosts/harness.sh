#!/usr/bin/env bash
# scripts/hosts itself (ctest label hosts): each host has its own hostname, /dev/shm and local
# directory; exec, rate, kill, silence, heal, freeze and thaw reach the right host; the command's exit status comes back; what
# the harness made is gone after a normal end, a failure and a SIGTERM; bad input is refused.
#   tests/hosts/harness.sh      (exit 77: the hosts cannot be made here)
set -uo pipefail
cd "$(dirname "$0")/../.."
failed=0
fail() {
  echo "FAILED: $*"
  failed=1
}

# Bad input is refused before anything is made (no root needed).
for bad in "-n 1" "-n 2 --rate fast" "-n 2 --slots 0" "-n x" "-n 00"; do
  out=$(scripts/hosts $bad -- true 2>&1)
  [ $? = 2 ] && grep -q "scripts/hosts:" <<<"$out" || fail "scripts/hosts $bad should be refused with a message (got: $out)"
done
out=$(scripts/hosts rate h1 1gbit 2>&1)
[ $? = 2 ] && grep -q "inside a command that scripts/hosts runs" <<<"$out" || fail "rate outside the harness: $out"


inside=$(scripts/hosts -n 3 -- bash -c '
  set -e
  echo "h0: $(hostname) $FLEXTP_HOST"
  touch /dev/shm/flextp-harness-test "$FLEXTP_HOST_DIR/mine"
  for h in h1 h2; do
    scripts/hosts exec $h -- bash -c "echo $h: \$(hostname) \$FLEXTP_HOST; ls /dev/shm/flextp-harness-test 2>/dev/null || echo no-shm; ls \$FLEXTP_HOST_DIR/mine 2>/dev/null || echo no-local"
  done
  (timeout 3 bash -c "</dev/tcp/h2/9" 2>&1 || true) | grep -q refused && echo reached-h2  # h2 answers: no server there
  scripts/hosts rate h1 10mbit && scripts/hosts rate h1 off && echo rates-set
  scripts/hosts exec h1 -- sh -c "touch \$FLEXTP_HOSTS/h1-up; exec sleep 300" &
  for _ in $(seq 200); do [ -e $FLEXTP_HOSTS/h1-up ] && break; sleep 0.05; done
  scripts/hosts kill h1
  wait $! 2>/dev/null || echo "h1 killed: $?"
  scripts/hosts exec h1 -- true 2>/dev/null || echo "h1 lost: $?"
  scripts/hosts exec "h." -- true 2>&1 | grep -q "no host .h\.. here" && echo "pattern refused"
  # A partition: h2 silent, its processes alive; healed, it answers again.
  scripts/hosts exec h2 -- sh -c "echo \$\$ >\$FLEXTP_HOSTS/h2-up.tmp; mv \$FLEXTP_HOSTS/h2-up.tmp \$FLEXTP_HOSTS/h2-up; exec sleep 300" &
  for _ in $(seq 200); do [ -e $FLEXTP_HOSTS/h2-up ] && break; sleep 0.05; done
  sleeper=$(cat $FLEXTP_HOSTS/h2-up)
  scripts/hosts silence h2
  (timeout 2 bash -c "</dev/tcp/h2/9" 2>&1 || true) | grep -q refused || echo "h2 unreachable"
  scripts/hosts exec h2 -- true 2>&1 | grep -q "Connection timed out" && echo "h2 silent: ${PIPESTATUS[0]}"
  kill -0 $sleeper && echo "h2 process alive"
  scripts/hosts heal h2
  scripts/hosts exec h2 -- true && echo "h2 healed"
  scripts/hosts freeze h2
  [ "$(ps -o stat= -p $sleeper | cut -c1)" = T ] && echo "h2 frozen"
  scripts/hosts exec h2 -- true 2>/dev/null || echo "frozen h2 silent: $?"
  scripts/hosts thaw h2
  [ "$(ps -o stat= -p $sleeper | cut -c1)" = S ] && echo "h2 thawed"
  scripts/hosts freeze h9 2>&1 | grep -q "no host .h9. here" && echo "freeze refuses h9"
  echo "prefix $(cat $FLEXTP_HOSTS/prefix)"
' 2>&1)
status=$?
[ "$status" = 77 ] && { echo "$inside"; exit 77; }
echo "$inside"
[ "$status" = 0 ] || fail "the command exited with $status"
for h in h0 h1 h2; do
  grep -q "^$h: $h $h$" <<<"$inside" || fail "$h should have its own hostname and know its name"
done
[ "$(grep -c no-shm <<<"$inside")" = 2 ] || fail "h1 and h2 should not see h0's /dev/shm"
[ "$(grep -c no-local <<<"$inside")" = 2 ] || fail "h1 and h2 should not see h0's local directory"
grep -q reached-h2 <<<"$inside" || fail "h0 should reach h2 by name over the hosts' network"
grep -q rates-set <<<"$inside" || fail "rate should set and free a host's link"
grep -q "h1 killed: 137" <<<"$inside" || fail "kill should end h1's processes with SIGKILL"
grep -q "h1 lost: 255" <<<"$inside" || fail "a killed host should answer no more (as ssh: 255)"
grep -q "pattern refused" <<<"$inside" || fail "exec 'h.' should be refused: a host name is a name, not a pattern"
for said in "h2 unreachable" "h2 silent: 255" "h2 process alive" "h2 healed" "h2 frozen" "frozen h2 silent: 255" \
  "h2 thawed" "freeze refuses h9"; do
  grep -q "^$said$" <<<"$inside" || fail "silence, heal, freeze and thaw: no '$said'"
done
prefix=$(sed -n 's/^prefix //p' <<<"$inside")
[ -n "$prefix" ] && ip netns list | grep -q "^$prefix-" && fail "namespaces $prefix-* left after the run"

scripts/hosts -n 2 -- sh -c 'exit 3'
[ $? = 3 ] || fail "the command's exit status should come back"

told=$(mktemp /tmp/flextp-harness.XXXXXX)
PREFIX_FILE=$told scripts/hosts -n 2 -- sh -c 'cat $FLEXTP_HOSTS/prefix > $PREFIX_FILE; exec sleep 300' &
harness=$!
for _ in $(seq 100); do [ -s "$told" ] && break; sleep 0.1; done
prefix=$(cat "$told")
rm -f "$told"
kill -TERM $harness
wait $harness 2>/dev/null
[ $? = 143 ] || fail "SIGTERM should end the harness with 143"
[ -n "$prefix" ] || fail "the harness did not start"
ip netns list | grep -q "^$prefix-" && fail "namespaces $prefix-* left after SIGTERM"

[ "$failed" = 0 ] && echo "passed: scripts/hosts"
exit "$failed"
