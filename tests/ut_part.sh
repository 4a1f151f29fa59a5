#!/usr/bin/env bash
# ut_part.sh RUNNER PART — run one part of the CUnit suites of RUNNER (a
# ut_main, plain or ASan); its last line is the runner's "N passed, N failed".
#
#   net    the modules whose suites bind loopback ports (rpc: 42000-54049,
#          peers: 54000-57049, server's strata-server: 57000-59999, etcd:
#          its etcd members on 7000-8999; addb: a port the kernel
#          picks) and open shm endpoints:
#          steps.list keeps them in group "ut"
#   local  every other module: no port, no shm endpoint, no server; their
#          steps share nothing (group "-")
#   all    every module (what RUNNER alone runs)
#
# The two parts together must be every suite RUNNER has: a module added to
# tests/ut_main.c and to neither list below fails this step (named), never
# goes unrun.
set -u
run=${1:?usage: ut_part.sh RUNNER net|local|all}
part=${2:?usage: ut_part.sh RUNNER net|local|all}
net=rpc,server,etcd,addb
local=core,tier,layout,clovis,clovis_bad,store,concurrency,stripe,smr,dtm,s3,analyzer,fdmi,hsm_policy,hsm,isc,isc_api,posix_ns,pnfs

all=$("$run" -l) || { echo "ut_part.sh: $run -l failed"; echo "0 passed, 1 failed"; exit 1; }
both=$({ "$run" -l -s "$net"; "$run" -l -s "$local"; } | sort)
left=$(comm -23 <(echo "$all" | sort) <(echo "$both"))
twice=$(echo "$both" | uniq -d)
if [ -n "$left$twice" ]; then
	echo "ut_part.sh: the net ($net) and local ($local) module lists" \
	     "do not split $run's suites: in neither:" $left "; in both:" $twice
	echo "0 passed, 1 failed"
	exit 1
fi
case "$part" in
net) exec "$run" -s "$net" ;;
local) exec "$run" -s "$local" ;;
all) exec "$run" ;;
*) echo "ut_part.sh: part '$part' is not net, local or all"; echo "0 passed, 1 failed"; exit 1 ;;
esac
