#!/usr/bin/env bash
# Runs a test command with its whole output on the terminal and in a log, and when it fails,
# repeats the lines that name what failed at the end: a run prints thousands of lines, and a
# reader of only its tail (a CI page) would otherwise see "failed with 1 issue" and no name.
# usage: scripts/test-with-summary.sh LOG COMMAND...
set -uo pipefail
log=$1; shift
mkdir -p "$(dirname "$log")"
"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "---- what failed (from $log) ----"
  # Swift Testing marks a failed test or recorded issue with ✘; XCTest prints "error:" and
  # "failed"; a crash leaves "Fatal error" or a signal.
  grep -E '✘|: error: |Test Case .* failed|Fatal error|signal [0-9]+|Exited with' "$log" | tail -60
fi
exit "$status"
