#!/usr/bin/env bash
# Runs one cargo-fuzz campaign and prints its row for fuzz/README.md:
#   | date | target | duration | executions | corpus | coverage (cov/ft) | findings |
# Usage (from fuzz/): tools/campaign.sh TARGET SECONDS
# Builds without a sanitizer (the engine is safe Rust outside one module) but with debug
# assertions, so integer overflow traps; the corpus grows in fuzz/corpus/TARGET.
set -euo pipefail
target=$1
seconds=$2
mkdir -p "corpus/$target" artifacts logs
log="logs/$target-$(date -u +%Y%m%dT%H%M%S).log"
status=0
start=$(date +%s)
cargo +nightly fuzz run -s none --debug-assertions "$target" "corpus/$target" "seeds/$target" -- \
  -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 -timeout=30 > "$log" 2>&1 || status=$?
elapsed=$(( $(date +%s) - start ))
# The fuzzing time libFuzzer reports (the wall time above includes the build).
done_s=$(grep -oE "^Done [0-9]+ runs in [0-9]+ second" "$log" | grep -oE "[0-9]+ second" | grep -oE "[0-9]+" || true)
if [ -n "$done_s" ]; then elapsed=$done_s; fi
execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
last=$(grep -E '^#[0-9]+' "$log" | tail -1)
cov=$(echo "$last" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+' || echo "?")
ft=$(echo "$last" | grep -oE 'ft: [0-9]+' | grep -oE '[0-9]+' || echo "?")
corpus=$(ls "corpus/$target" | wc -l)
if [ "$status" -eq 0 ]; then findings="none"; else findings="exit $status, see $log"; fi
echo "| $(date -u +%F) | $target | ${elapsed} s | $execs | $corpus | $cov / $ft | $findings |"
