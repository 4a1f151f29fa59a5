#!/usr/bin/env bash
# crash_metanv.sh BUILD [ROUNDS] — the crash-consistency test (crash_test.sh)
# on a store made with its metadata on NVRAM (CLOVIS_CONF_META_NVRAM, the
# NVRAM directory a fresh one in /dev/shm): ROUNDS SIGKILL rounds (default
# 50) plus the two fault rounds.  Its own step in tests/steps.list, so that
# its log has its own name.
exec "$(dirname "$0")/crash_test.sh" "${1:-build}" "${2:-50}" metanv
