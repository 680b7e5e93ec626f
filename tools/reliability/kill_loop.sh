#!/usr/bin/env bash
# SIGKILL loop of `sessdb stress` across many write windows and segment rolls, checked from
# outside: after each kill, every `ack SESSION SEQ` line printed must be in the reopened
# store (`sessdb ls --json`), every session a `deleted SESSION` line names must be gone (with
# `--churn`), and `sessdb verify` must find nothing.
#
#   tools/reliability/kill_loop.sh SESSDB_BINARY KILLS [stress flags...]
#   e.g. tools/reliability/kill_loop.sh target/release/sessdb 40
#        tools/reliability/kill_loop.sh target/release/sessdb 20 --sync --threads 4
#        tools/reliability/kill_loop.sh target/release/sessdb 30 --threads 4 --churn
#
# Each round runs on a fresh store and is killed after a random 0.05-1.2 s. Prints one line
# per kill and a summary; exits 1 on the first lost acknowledgement or verify problem.
set -euo pipefail
bin=$(realpath "$1"); kills=$2; shift 2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
total=0
for round in $(seq 1 "$kills"); do
  rm -rf "$work/st"
  "$bin" stress "$work/st" --seconds 60 --quiet "$@" > "$work/acks" 2>/dev/null &
  pid=$!
  sleep "$(python3 -c "import random; print(round(random.uniform(0.05, 1.2), 3))")"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ ! -d "$work/st/segments" ]; then echo "kill $round: before the store existed"; continue; fi
  "$bin" ls "$work/st" --json > "$work/ls.json"
  n=$(python3 - "$work/acks" "$work/ls.json" <<'PY'
import json, sys
acked = {}
# With --churn: `deleting S` before a deletion, `deleted S` once it is acknowledged.
deleting, deleted = set(), set()
for line in open(sys.argv[1], errors="replace"):
    parts = line.split()
    if len(parts) == 3 and parts[0] == "ack" and parts[2].isdigit():
        acked[parts[1]] = max(acked.get(parts[1], -1), int(parts[2]))
    elif len(parts) == 2 and parts[0] == "deleting":
        deleting.add(parts[1])
    elif len(parts) == 2 and parts[0] == "deleted":
        deleted.add(parts[1])
held = {s["id"]: s["events"] for s in json.load(open(sys.argv[2]))}
# A session whose deletion began may be there whole or gone; one deleted must be gone.
lost = [(s, q, held.get(s, 0)) for s, q in acked.items()
        if s not in deleting and held.get(s, 0) <= q]
back = sorted(s for s in deleted if s in held)
if lost or back:
    print("LOST", lost[:5], "DELETED BACK", back[:5])
    sys.exit(1)
print(sum(1 for l in open(sys.argv[1], errors="replace") if l.startswith("ack ")))
PY
) || { echo "kill $round: $n"; exit 1; }
  if ! "$bin" verify "$work/st" > "$work/verify" 2>&1; then
    echo "kill $round: verify failed:"; cat "$work/verify"; exit 1
  fi
  total=$((total + n))
  echo "kill $round: $n acknowledged, all there, verify clean"
done
echo "$kills kills, $total acknowledged writes, 0 lost, verify clean after each"
