#!/usr/bin/env bash
# Runs each libFuzzer target of touchline-fuzz for a while, from its stored inputs.
# usage: scripts/fuzz.sh SECONDS TARGET...   (make fuzz builds the binary first)
# A target's new inputs go to .build/fuzz-corpus/<target> (the stored seeds are never changed);
# a crash or broken invariant is saved under .build/fuzz-findings/ and fails the run: keep it
# under Fuzz/Corpus/<target>/ once fixed, so the test suite replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=$1; shift
binary=.build/fuzz/release/touchline-fuzz
mkdir -p .build/fuzz-findings
status=0
for target in "$@"; do
  corpus=.build/fuzz-corpus/$target
  mkdir -p "$corpus"
  cp -n Fuzz/Corpus/"$target"/* "$corpus"/ 2>/dev/null || true
  log=.build/fuzz-findings/$target.log
  if "$binary" "$target" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix=.build/fuzz-findings/"$target"- "$corpus" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
    echo "fuzz $target: ${seconds} s, $runs runs, coverage $cov edges, corpus $(ls "$corpus" | wc -l) inputs, no finding"
  else
    echo "fuzz $target: FINDING (see $log and .build/fuzz-findings/$target-*)"
    tail -30 "$log"
    status=1
  fi
done
exit $status
