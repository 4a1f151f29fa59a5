#!/usr/bin/env bash
# posix_cluster_test.sh BUILD — the POSIX namespace (gateways/posix/ns.h)
# on a cluster as a user's cluster runs it: 3 servers and one etcd member
# on loopback, `strata cluster up --meta-replicas 3` (replicated homes,
# index replicas on every server), and the whole posix_ns suite against
# it (ut_main -s posix_ns with STRATA_UT_CLUSTER; the tests that need a
# local store skip themselves, naming why):
#
#   * every change one dtx of index records and entity members on several
#     servers: create, mkdir, rmdir (the directory index's DELETE names
#     the incarnation its open found; before, every rmdir on a cluster was
#     refused, "DELETE without the replica flags or an incarnation"),
#     rename in all its forms, links, symlinks, file data, the cache;
#   * a file with 200 long-named xattrs removed (its xattr records split
#     over members of at most CLOVIS_DTX_MEMBER_RECS_MAX bytes; before,
#     one member of 50 KB was refused and the file could not be removed);
#   * ns_check after each test: no inode, xattr, index or object left.
#
# The suite's create benchmark runs with 200 files (STRATA_UT_POSIX_PERF):
# its figures are not checked here (docs/performance.md, issue 33).
# Ports 4900-4999 (base 4900-4992 from the PID, the etcd member on P+3 and
# P+4; no other step uses them: tests/steps.list); every wait is bounded;
# everything is killed and removed on any exit.  Ends with "N passed, N
# failed".
set -u
CL_UP_ARGS="--meta-replicas 3"
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" posixcl 4900 24
cl_need strata strata-server ut_main

echo "--- 3 servers, one etcd member, meta_replicas 3"
cl_up
check "every home served by itself" cl_settled 180

echo "--- the posix_ns suite against the cluster"
export STRATA_UT_POSIX_PERF=200
cl_ut "posix_ns" -s posix_ns
unset STRATA_UT_POSIX_PERF

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
