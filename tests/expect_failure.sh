#!/bin/sh
# expect_failure.sh SECONDS COMMAND [ARGS...] — passes when COMMAND ends with a non-zero status within SECONDS
# (tests/faults.cmake: a job that lost a rank must stop); fails when it succeeds or is still running (a hang).
limit=$1
shift
timeout --kill-after=10 "$limit" "$@"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "expect_failure: still running after ${limit} s (a hang): $*" >&2
  exit 1
fi
if [ "$rc" -eq 0 ]; then
  echo "expect_failure: the command succeeded, but it should have stopped with an error: $*" >&2
  exit 1
fi
echo "expect_failure: stopped with status $rc, as expected"
exit 0
