#!/bin/bash
# The firmware test's checks, in the booted image (scripts/firmware test). Boot 1 runs
# the checks of a device in use and ends with `systemctl poweroff`; boot 2, of the same
# disk, checks that the stop was clean and the state survived it. One line per check
# goes to checks.txt on the host's share (fwout), the verdict to verdict, the
# devservices journal to journal.txt.
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
OUT=/run/fwout
mkdir -p $OUT
modprobe 9pnet_virtio 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L fwout $OUT || echo "fwtest: no fwout share"
ROUND=$(sed -n 's/.*fwtest\.round=\([0-9]*\).*/\1/p' /proc/cmdline)
ROUND=${ROUND:-1}
FAILED=0
N=0
CALL=(devservices call --bus system -w 10000)
STATE=/var/lib/devservices

say() { echo "fwtest: $*" | tee -a $OUT/checks.txt >/dev/console; }
# check NAME DETAIL CMD...: one line, ok or FAIL, with what the command printed when it failed
check() {
  local name=$1; shift
  local out rc
  out=$("$@" 2>&1); rc=$?
  N=$((N + 1))
  if [ $rc = 0 ]; then say "ok   $ROUND.$N $name${out:+: $(head -c 300 <<<"$out" | tr '\n' ' ')}"
  else FAILED=1; say "FAIL $ROUND.$N $name: $(tail -c 800 <<<"$out" | tr '\n' ' ')"; fi
}
fail() { echo "$*"; return 1; }
# until SECONDS CMD...: CMD succeeds within SECONDS
until_ok() {
  local end=$((SECONDS + $1)); shift
  while ! "$@" >/dev/null 2>&1; do [ $SECONDS -lt $end ] || { "$@"; return 1; }; sleep 0.2; done
}
call() { "${CALL[@]}" "$@"; }
# as USER CMD...: CMD as USER with that user's groups, nothing else
as() { local u=$1; shift; setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups "$@"; }
# the JSON reply of a call has "returnValue":true
returns_true() { local r; r=$("$@") || { echo "$r"; return 1; }; jq -e '.returnValue == true' <<<"$r" >/dev/null || { echo "$r"; return 1; }; echo "$r"; }
returns_false() { local r; r=$("$@"); jq -e '.returnValue == false' <<<"$r" >/dev/null || { echo "$r"; return 1; }; echo "$r"; }
main_pid() { systemctl show -p MainPID --value devservices.service; }
bus_names() { busctl list --no-legend --acquired 2>/dev/null | awk '{print $1}' | grep -E '^com\.vendor\.' | sort; }
BOARD_NAMES=$(jq -r '.services[] | if . == "record" then "com.vendor.pipeline.record.main" else "com.vendor.service." + . end' /usr/share/devservices/boards/qemu.json | sort)
all_names() { [ "$(bus_names)" = "$BOARD_NAMES" ] || { echo "on the bus: $(bus_names | tr '\n' ' ')"; return 1; }; }

say "boot $ROUND: waiting for the system to be up"
systemctl is-system-running --wait >/dev/null 2>&1
# ------------------------------------------------------------------ 1. boot
c_boot() {
  local s; s=$(systemctl is-system-running)
  [ "$s" = running ] || { systemctl --failed --no-legend; fail "system is $s"; }
  systemctl is-active --quiet devservices.service || fail "devservices is $(systemctl is-active devservices.service)"
  local status; status=$(systemctl show -p StatusText --value devservices.service)
  [[ $status == serving* ]] || fail "status: $status"
  echo "$status"
}
c_names() { all_names && echo "$(wc -l <<<"$BOARD_NAMES") names"; }
c_failed() { local f; f=$(systemctl --failed --no-legend); [ -z "$f" ] || fail "$f"; }
c_journal_quiet() {
  local e; e=$(journalctl -b -u devservices.service -p err --no-pager -q -o cat)
  [ -z "$e" ] || fail "$e"
}
c_journal_json() {
  # every line devservices wrote is JSON whose level maps to the entry's priority
  journalctl -b -u devservices.service -o json --no-pager -q _PID="$(main_pid)" \
    | jq -e -s 'map(select(._COMM != "systemd")) | (length > 0) and all(.MESSAGE | (fromjson? // null) | . != null and (.level | type == "number"))' >/dev/null \
    || { journalctl -b -u devservices.service -o json --no-pager -q | jq -r 'select((.MESSAGE | fromjson? // null) == null) | .MESSAGE' | head -5; return 1; }
  local bad
  bad=$(journalctl -b -u devservices.service -o json --no-pager -q _PID="$(main_pid)" | jq -r '
    (.MESSAGE | fromjson) as $m | {"10":"7","20":"7","30":"6","40":"4","50":"3","60":"2"}[($m.level|tostring)] as $want
    | select(.PRIORITY != $want) | "\(.PRIORITY) for level \($m.level): \($m.msg)"' | head -5)
  [ -z "$bad" ] || fail "$bad"
}

if [ "$ROUND" = 1 ]; then
  check "multi-user.target reached; devservices active through READY=1" c_boot
  check "every bus name of the board is on the system bus" c_names
  check "systemctl --failed is empty" c_failed
  check "no journal line of priority err or worse from devservices" c_journal_quiet
  check "every devservices log line is JSON with its priority" c_journal_json
fi

# ------------------------------------------------------------------ the verdict
journalctl -b -u devservices.service --no-pager -o short-monotonic >$OUT/journal.txt 2>&1
if [ $FAILED = 0 ]; then echo pass >$OUT/verdict; else echo fail >$OUT/verdict; fi
say "boot $ROUND: $(cat $OUT/verdict)"
sync
umount $OUT
[ "$ROUND" = 1 ] && systemctl poweroff || systemctl poweroff
