#!/usr/bin/env bash
# test/t/00_smoke.sh: the shell TAP tests reach the cluster and the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 2
is "$(psql -XAtc 'SELECT 1')" 1 "psql reaches the throwaway cluster"
ok "kcat -L -b $KL_BOOTSTRAP -m 5 >/dev/null 2>&1" "kcat reaches the test broker"
