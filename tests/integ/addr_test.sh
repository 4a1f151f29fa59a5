#!/usr/bin/env bash
# addr_test.sh BUILD — server addresses are any IPv4 address, IPv6 address
# or host name, resolved once at start (issue 27 point 5; docs/cluster.md
# "Server addresses"):
#
#   1. ::1: a 3-server cluster file addressing every server as IPv6 "::1"
#      (quoted, and once unquoted): the servers listen on [::1] (ss), and
#      the CLI puts and gets an object and index records through it, and
#      through --server "[::1]:PORT" (the cc_server form);
#   2. localhost: the same with every server addressed as "localhost";
#   3. a name that does not resolve: s1 at no-such-host.invalid (the
#      reserved TLD .invalid never resolves, RFC 6761): strata-server s0
#      refuses to start, and a client refuses to open, each with a message
#      naming s1 and the name; and an address that is not one ("::1::2")
#      is refused naming the key.
#
# Names are looked up in a private /etc: the step runs in a mount
# namespace of its own (unshare -m) over a copy of /etc whose hosts file
# names localhost at 127.0.0.1 and ::1 (as an installed Debian has; a
# debootstrap root has no /etc/hosts at all) and whose resolv.conf names
# only 127.0.0.1, where nothing answers DNS: no-such-host.invalid is
# refused on loopback at once, and no query leaves the machine whatever
# the host's files say.  The host's own /etc is not touched.
# Ports: base 20000-23999 from the PID (group pa, tests/steps.list), six
# of them (::1: PORT..PORT+2, localhost: PORT+3..PORT+5).
# Ends with "N passed, N failed".
set -u
if [ -z "${STRATA_ADDR_TEST_NS:-}" ]; then
	if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null 2>&1; then
		echo "FAIL a private /etc needs root and unshare(1) (util-linux)"
		echo "0 passed, 1 failed"
		exit 1
	fi
	export STRATA_ADDR_TEST_NS=1
	exec unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/cluster_lib.sh"
cl_init "${1:-build}" addr 20000 1000
mkdir "$T/etc" && cp -a /etc/. "$T/etc/" &&
	printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' \
		>"$T/etc/hosts" &&
	printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' \
		>"$T/etc/resolv.conf" &&
	mount --bind "$T/etc" /etc
if ! check "a private /etc (hosts: localhost; resolver: 127.0.0.1 only)" \
	grep -q "^nameserver 127.0.0.1$" /etc/resolv.conf; then
	echo "$pass passed, $fail failed"
	exit 1
fi
PORT=$((20000 + ($$ % 500) * 8))
cl_port_note $((PORT + 3))
cl_need strata strata-server
export RES_OPTIONS="timeout:1 attempts:1"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/secret"
chmod 600 "$T/secret"

# conf TAG ADDR0 ADDR1 ADDR2 BASE: a 3-server cluster file $T/TAG.yaml with
# server I at ADDRI (written as given: quote it in the argument for a
# quoted YAML scalar), port BASE+I, data in $T/TAG-sI.
conf() {
	local tag=$1 base=$5 i
	local -a a=("$2" "$3" "$4")
	{
		echo "cluster:"
		echo "  name: $tag"
		echo "  secret_file: secret"
		echo "  index_replicas: 3"
		echo "  connect_timeout: 2s"
		echo "  call_timeout: 20s"
		echo "device_size: 8MiB"
		echo "servers:"
		for i in 0 1 2; do
			echo "  - name: s$i"
			echo "    address: ${a[$i]}"
			echo "    port: $((base + i))"
			echo "    data_dir: $tag-s$i"
			echo "    devices:"
			for d in 1 2 3 4 5 6; do echo "      - { tier: flash }"; done
		done
	} >"$T/$tag.yaml"
}

# serve TAG: start the 3 servers of $T/TAG.yaml (pid files and logs in
# D=$T/TAG, which cl_cleanup's kill covers while D is it) and wait until
# all answer.
serve() {
	local i
	D=$T/$1
	mkdir -p "$D"
	for i in 0 1 2; do
		srv_start $i "$T/$1.yaml" --status-file "$D/s$i.status" ||
			no "strata-server s$i of $1 started"
	done
	UPCONF=$T/$1.yaml
	check "$1: all 3 servers answer" wait_up
}

# use TAG ARGS...: the CLI with ARGS (--cluster FILE or --server A:P) puts
# and gets an object and index records; checked.
use() {
	local tag=$1 f=$T/obj.in
	shift
	head -c 300000 /dev/urandom >"$f"
	timeout 60 "$S" -q "$@" obj put "@o-$tag" "$f" >"$T/out" 2>&1
	check "$tag: obj put" test $? -eq 0
	rm -f "$T/obj.out"
	timeout 60 "$S" -q "$@" obj get "@o-$tag" "$T/obj.out" >>"$T/out" 2>&1
	check "$tag: obj get returns the bytes put" cmp -s "$f" "$T/obj.out"
	timeout 60 "$S" -q "$@" idx create "@i-$tag" >>"$T/out" 2>&1 &&
		timeout 60 "$S" -q "$@" idx put "@i-$tag" k1 v1 k2 v2 >>"$T/out" 2>&1
	check "$tag: idx create, put" test $? -eq 0
	check "$tag: idx get" test "$(timeout 60 "$S" "$@" idx get "@i-$tag" k2 2>>"$T/out")" = v2
	[ "$fail" -gt 0 ] && sed 's/^/     /' "$T/out" | tail -5
	return 0
}

# No process of D's servers is left (every pid file's process gone).
none_left() {
	local f
	for f in "$D"/s*.pid; do
		[ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && return 1
	done
	return 0
}

# down TAG: stop the 3 servers of TAG.
down() {
	local i
	D=$T/$1
	for i in 0 1 2; do srv_stop $i; done
}

echo "--- ::1: every server addressed as IPv6 ::1"
conf v6 '"::1"' '::1' "'::1'" "$PORT"
serve v6
# a server answers as soon as its endpoint is open, a moment before its
# start ends and it writes "serving": waited for (at most 10 s)
serving_v6() {
	local k
	for k in $(seq 1 50); do
		grep -q "^serving 0 \[::1\]:$PORT\$" "$T/v6/s0.status" && return 0
		sleep 0.2
	done
	return 1
}
check "v6: s0 reports serving [::1]:$PORT" serving_v6
check "v6: the servers listen on [::1]" \
	test "$(ss -Hltn 2>/dev/null | grep -cE "\[::1\]:($PORT|$((PORT + 1))|$((PORT + 2))) ")" -eq 3
use v6 --cluster "$T/v6.yaml"
timeout 60 "$S" cluster status --cluster "$T/v6.yaml" >"$T/st" 2>&1
check "v6: cluster status names s1 at [::1]:$((PORT + 1))" \
	grep -qF "s1 [::1]:$((PORT + 1))" "$T/st"
STRATA_SECRET=$(cat "$T/secret") use v6-server --server "[::1]:$((PORT + 1))"
down v6

echo "--- localhost: every server addressed by name"
conf lh localhost localhost localhost $((PORT + 3))
serve lh
use lh --cluster "$T/lh.yaml"
STRATA_SECRET=$(cat "$T/secret") use lh-server --server "localhost:$((PORT + 3))"
down lh

echo "--- no-such-host.invalid: refused at start, naming the server"
conf bad 127.0.0.1 no-such-host.invalid 127.0.0.1 $((PORT + 3))
D=$T/bad
mkdir -p "$D"
timeout 30 "$BD/strata-server" --config "$T/bad.yaml" --name s0 \
	--pid-file "$D/s0.pid" --log-file "$D/s0.log" >"$T/srv.out" 2>&1
rc=$?
sed 's/^/     /' "$T/srv.out" | head -3
check "strata-server s0 refuses to start (rc $rc)" test "$rc" -ne 0
check "naming s1 and its name" \
	grep -q "server s1: address 'no-such-host.invalid' does not resolve" "$T/srv.out"
check "no server left running" none_left
timeout 30 "$S" --cluster "$T/bad.yaml" idx get @i k >"$T/cli.out" 2>&1
rc=$?
sed 's/^/     /' "$T/cli.out" | head -3
check "a client refuses to open (rc $rc)" test "$rc" -ne 0
check "naming s1 and its name" \
	grep -q "server s1: address 'no-such-host.invalid' does not resolve" "$T/cli.out"
conf bad2 '"::1"' '"::1::2"' '"::1"' $((PORT + 3))
timeout 30 "$S" --cluster "$T/bad2.yaml" idx get @i k >"$T/cli.out" 2>&1
rc=$?
check "an address that is not one is refused (rc $rc), naming the key" \
	grep -q 'servers\[1\].address: expected an IPv4 address, an IPv6 address or a host name ("::1::2")' "$T/cli.out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
