#!/usr/bin/env bash
# run-tests.sh BUILD — run every test of Strata and total them.
#
# Each step is a program or script that ends its output with the line
# "N passed, N failed"; this script adds them up and ends with the same line
# for the whole run.  A step that exits non-zero without such a line counts
# as one failed test.  Steps are listed in tests/steps.list (one command per
# line, "$B" is the build directory).
set -u
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
cd "$top" || exit 2
export B
pass=0 fail=0
# NVRAM devices of test stores (/dev/shm/strata-*) present before the run:
# anything new still there at the end is named in a warning (not counted
# as a failure; another job running at the same time may own it).
shm_before=$(ls -d /dev/shm/strata-* 2>/dev/null | sort)
log_dir="$B/test-logs"
mkdir -p "$log_dir"
while IFS= read -r step; do
	case "$step" in ''|'#'*) continue ;; esac
	name=$(echo "$step" | awk '{print $1}' | xargs basename)
	log="$log_dir/$name.log"
	start=$(date +%s)
	eval "$step" </dev/null >"$log" 2>&1
	rc=$?
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
	if [ -n "$line" ]; then
		p=$(echo "$line" | awk '{print $1}')
		f=$(echo "$line" | awk '{print $3}')
		[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	else
		p=0; f=1
		[ "$rc" -eq 0 ] && { p=1; f=0; }
	fi
	pass=$((pass + p)); fail=$((fail + f))
	printf '%-28s %4d passed, %3d failed  (%ss)  log: %s\n' "$name" "$p" "$f" \
		"$(( $(date +%s) - start ))" "$log"
	if [ "$f" -ne 0 ]; then
		echo "---- last lines of $log ----"
		tail -25 "$log"
		echo "----"
	fi
done < "$here/steps.list"
for f in $(comm -13 <(echo "$shm_before") \
	   <(ls -d /dev/shm/strata-* 2>/dev/null | sort)); do
	echo "WARNING: $f was made during this run and is still there" \
	     "(a test did not remove its store's NVRAM device, or another" \
	     "job's)"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
