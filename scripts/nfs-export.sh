#!/usr/bin/env bash
# nfs-export.sh — an NFS export of one directory (in real use the
# strata-fuse mount point) by NFS-Ganesha with FSAL VFS, on 127.0.0.1 only.
#
#   nfs-export.sh start  --dir DIR --state STATE [--pseudo /strata]
#                        [--port 2049] [--mount-port PORT+1] [--no-v3]
#                        [--timeout 60]
#   nfs-export.sh stop   --state STATE
#   nfs-export.sh status --state STATE
#
# start writes STATE/ganesha.conf, starts ganesha.nfsd (pid in
# STATE/ganesha.pid, log STATE/ganesha.log), waits for it (at most
# --timeout s), checks the export with nfs-ls when libnfs-utils is there,
# and prints the URL to use on stdout, NFSv3 first when it is served:
#
#   nfs://127.0.0.1/strata?version=3&nfsport=2049&mountport=2050
#   nfs://127.0.0.1/strata?version=4&nfsport=2049
#
# (also in STATE/url3 and STATE/url4).  Clients must name the ports, as
# libnfs's nfsport= and mountport= do: no portmapper answers on
# 127.0.0.1:111 (below).  Everything else goes to stderr.
#
# Addresses and ports.  Ganesha binds 127.0.0.1 only (Bind_addr), TCP only
# (no UDP), on two ports it is told: NFS (--port, default 2049, used by v3
# and v4) and MOUNT (--mount-port, default the NFS port + 1, v3 only).
# NLM, RQUOTA and NFSv4 delegations are off, so it opens no other port and
# calls no client back.  The export admits 127.0.0.1 only.  Two exports
# cannot run at once with the same ports, nor two with v3 on one rpcbind
# (each registers NFS and MOUNT there): run them one at a time (the test
# steps do, under their group).
#
# Caching.  The export sets Attr_Expiration_Time = 0: the directory also
# changes behind Ganesha's back (the S3 gateway and other mounts share the
# namespace), and with Ganesha's default of 60 s nfs-cat served a file's
# old size and nfs-ls listed a removed file and missed a new one.
#
# rpcbind.  Ganesha will not serve v3 unless it can register with rpcbind
# (it exits "Cannot register NFS V3 on TCP").  When no rpcbind answers on
# /run/rpcbind.sock, start runs one in a network namespace of its own
# (unshare -n: it sees only its own loopback, so it opens no port on any
# address of this machine), reached by Ganesha through that Unix socket;
# stop ends it and removes the files it left in /run.  (Debian's rpcbind
# cannot be confined otherwise: `rpcbind -h 127.0.0.1` aborts with "double
# free", and without -h it listens on 0.0.0.0 and [::].)  An rpcbind that
# was already running is used and left alone.  Without unshare rights, or
# with --no-v3, only NFSv4 is served.
#
# Waits are bounded; stop kills by pid file only (SIGTERM, then SIGKILL
# after 20 s), after checking that the pid is still the program it
# started.  Exit status 0, else 1 (status: 3 when not running).
set -u

PROG=nfs-export.sh
say() { echo "$PROG: $*" >&2; }
die() { say "$*"; exit 1; }

usage() {
	sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

CMD=${1:-}
case $CMD in start|stop|status) shift ;; *) usage ;; esac
DIR= STATE= PSEUDO=/strata PORT=2049 MPORT= V3=1 WAIT=60
while [ $# -gt 0 ]; do
	case $1 in
	--dir) DIR=${2:-}; shift 2 ;;
	--state) STATE=${2:-}; shift 2 ;;
	--pseudo) PSEUDO=${2:-}; shift 2 ;;
	--port) PORT=${2:-}; shift 2 ;;
	--mount-port) MPORT=${2:-}; shift 2 ;;
	--no-v3) V3=0; shift ;;
	--timeout) WAIT=${2:-}; shift 2 ;;
	-h|--help) usage ;;
	*) say "unknown argument: $1"; usage ;;
	esac
done
[ -n "$STATE" ] || die "--state STATEDIR is needed"
MPORT=${MPORT:-$((PORT + 1))}
for n in "$PORT" "$MPORT" "$WAIT"; do
	case $n in ''|*[!0-9]*) die "not a number: '$n'" ;; esac
done
case $PSEUDO in /*) ;; *) die "--pseudo must be an absolute path" ;; esac

RUN_SOCK=/run/rpcbind.sock

# pid_of NAME COMM: the pid in STATE/NAME.pid when that process is alive
# and still runs COMM (a recycled pid is not ours); empty otherwise.
pid_of() {
	local p
	p=$(cat "$STATE/$1.pid" 2>/dev/null) || return 0
	case $p in ''|*[!0-9]*) return 0 ;; esac
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] && echo "$p"
	return 0
}

# stop_pid PID WHAT: SIGTERM, at most 20 s, then SIGKILL (and 5 s more).
stop_pid() {
	local p=$1 i
	kill "$p" 2>/dev/null
	for i in $(seq 1 200); do
		kill -0 "$p" 2>/dev/null || return 0
		sleep 0.1
	done
	say "$2 (pid $p) still there 20 s after SIGTERM: SIGKILL"
	kill -9 "$p" 2>/dev/null
	for i in $(seq 1 50); do
		kill -0 "$p" 2>/dev/null || return 0
		sleep 0.1
	done
	say "$2 (pid $p) did not go"
	return 1
}

rpcbind_answers() { timeout 5 rpcinfo >/dev/null 2>&1; }

port_used() { [ -n "$(ss -Htln "sport = :$1" 2>/dev/null)" ]; }

# remove_run_files: what our rpcbind (and Ganesha) left in /run that was
# not there before (STATE/run-new, made by note_run_files), files first
remove_run_files() {
	local f
	while read -r f; do
		[ -n "$f" ] || continue
		if [ -d "$f" ]; then rmdir "$f" 2>/dev/null; else rm -f "$f"; fi
	done < <(tac "$STATE/run-new" 2>/dev/null)
}

# ------------------------------------------------------------------ stop

do_stop() {
	local p rc=0
	[ -d "$STATE" ] || { say "no state directory $STATE"; return 0; }
	p=$(pid_of ganesha ganesha.nfsd)
	if [ -n "$p" ]; then
		stop_pid "$p" ganesha.nfsd || rc=1
		say "ganesha.nfsd (pid $p) stopped"
	fi
	rm -f "$STATE/ganesha.pid"
	p=$(pid_of rpcbind rpcbind)
	if [ -n "$p" ]; then
		stop_pid "$p" rpcbind || rc=1
		say "rpcbind (pid $p) stopped"
	fi
	if [ -f "$STATE/rpcbind.pid" ]; then
		# what our rpcbind (and Ganesha) left in /run and was not
		# there before: only when no rpcbind answers now
		rpcbind_answers || remove_run_files
		rm -f "$STATE/rpcbind.pid"
	fi
	if [ -f "$STATE/ganesha-run-new" ]; then
		rmdir /run/ganesha 2>/dev/null
		rm -f "$STATE/ganesha-run-new"
	fi
	rm -f "$STATE/run-new" "$STATE/url3" "$STATE/url4"
	return $rc
}

# ----------------------------------------------------------------- start

# Remember which of rpcbind's files in /run are not there yet (removed by
# stop once that rpcbind is gone).
note_run_files() {
	local f
	: >"$STATE/run-new"
	for f in /run/rpcbind /run/rpcbind/rpcbind.xdr /run/rpcbind/portmap.xdr \
		/run/rpcbind.lock /run/rpcbind.sock; do
		[ -e "$f" ] || echo "$f" >>"$STATE/run-new"
	done
}

start_rpcbind() {
	local i p
	rpcbind_answers && { say "using the rpcbind already running"; return 0; }
	command -v rpcbind >/dev/null || { say "no rpcbind (apt-get install rpcbind)"; return 1; }
	command -v unshare >/dev/null || { say "no unshare"; return 1; }
	unshare -n true 2>/dev/null || {
		say "cannot make a network namespace for rpcbind"
		return 1
	}
	note_run_files
	# a stale socket from an rpcbind that is gone: rpcbind replaces it
	setsid unshare -n rpcbind -f </dev/null >>"$STATE/rpcbind.log" 2>&1 &
	echo $! >"$STATE/rpcbind.pid"
	for i in $(seq 1 100); do
		rpcbind_answers && { say "rpcbind started (pid $!, own network namespace)"; return 0; }
		kill -0 "$!" 2>/dev/null || break
		sleep 0.1
	done
	say "rpcbind did not answer on $RUN_SOCK within 10 s"
	tail -n 5 "$STATE/rpcbind.log" >&2
	p=$(pid_of rpcbind rpcbind)
	[ -n "$p" ] && stop_pid "$p" rpcbind
	remove_run_files
	rm -f "$STATE/rpcbind.pid" "$STATE/run-new"
	return 1
}

write_conf() {
	local protos=4
	[ "$V3" = 1 ] && protos=3,4
	cat >"$STATE/ganesha.conf" <<EOF
# written by scripts/nfs-export.sh
NFS_CORE_PARAM {
	Bind_addr = 127.0.0.1;
	Protocols = $protos;
	NFS_Port = $PORT;
	MNT_Port = $MPORT;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
	Mount_Path_Pseudo = true;
}
NFSV4 {
	Graceless = true;
	RecoveryBackend = fs;
	RecoveryRoot = "$STATE/recov";
	Delegations = false;
	Allow_Numeric_Owners = true;
	Only_Numeric_Owners = true;
}
EXPORT_DEFAULTS {
	Access_Type = None;
}
EXPORT {
	Export_Id = 1;
	Path = "$DIR";
	Pseudo = "$PSEUDO";
	Protocols = $protos;
	Transports = TCP;
	SecType = sys;
	Squash = No_Root_Squash;
	Attr_Expiration_Time = 0;
	Access_Type = None;
	CLIENT {
		Clients = 127.0.0.1;
		Access_Type = RW;
	}
	FSAL { Name = VFS; }
}
LOG {
	Default_Log_Level = EVENT;
}
EOF
}

start_fail() {
	say "$*"
	if [ -f "$STATE/ganesha.log" ]; then
		say "last lines of $STATE/ganesha.log:"
		grep -vE "dbus|DBUS|principal nfs|RADOS" "$STATE/ganesha.log" |
			tail -n 8 | cut -c1-240 >&2
	fi
	do_stop
	exit 1
}

do_start() {
	local p i url3= url4= gpid lib
	[ -n "$DIR" ] || die "--dir EXPORT_DIR is needed"
	[ -d "$DIR" ] || die "no directory $DIR"
	DIR=$(cd "$DIR" && pwd -P)
	command -v ganesha.nfsd >/dev/null ||
		die "no ganesha.nfsd (apt-get install nfs-ganesha nfs-ganesha-vfs)"
	lib=$(ls /usr/lib/*/ganesha/libfsalvfs.so /usr/lib/ganesha/libfsalvfs.so \
		2>/dev/null | head -1)
	[ -n "$lib" ] || die "no FSAL VFS (apt-get install nfs-ganesha-vfs)"
	mkdir -p "$STATE/recov" || die "cannot make $STATE"
	STATE=$(cd "$STATE" && pwd -P)
	p=$(pid_of ganesha ganesha.nfsd)
	[ -z "$p" ] || die "already running (pid $p): stop it first"
	p=$(pgrep -x ganesha.nfsd | head -1)
	[ -z "$p" ] || say "note: another ganesha.nfsd runs (pid $p)"
	for i in "$PORT" "$MPORT"; do
		port_used "$i" && die "port $i is taken: $(ss -Htlnp "sport = :$i" | head -1)"
	done
	trap 'start_fail "interrupted"' INT TERM

	if [ "$V3" = 1 ] && ! start_rpcbind; then
		say "serving NFSv4 only"
		V3=0
		rm -f "$STATE/rpcbind.pid"
	fi
	[ -d /run/ganesha ] || : >"$STATE/ganesha-run-new"
	write_conf
	: >"$STATE/ganesha.log"
	setsid ganesha.nfsd -F -L "$STATE/ganesha.log" -f "$STATE/ganesha.conf" \
		-p "$STATE/ganesha.daemon.pid" -N NIV_EVENT \
		</dev/null >>"$STATE/ganesha.out" 2>&1 &
	gpid=$!
	echo "$gpid" >"$STATE/ganesha.pid"
	for i in $(seq 1 $((WAIT * 10))); do
		grep -q "NFS SERVER INITIALIZED" "$STATE/ganesha.log" && break
		kill -0 "$gpid" 2>/dev/null ||
			start_fail "ganesha.nfsd exited during its start"
		sleep 0.1
	done
	grep -q "NFS SERVER INITIALIZED" "$STATE/ganesha.log" ||
		start_fail "ganesha.nfsd not initialized within $WAIT s"
	for i in $(seq 1 50); do
		port_used "$PORT" && break
		sleep 0.1
	done
	port_used "$PORT" || start_fail "nothing listens on port $PORT"

	url4="nfs://127.0.0.1$PSEUDO?version=4&nfsport=$PORT"
	[ "$V3" = 1 ] &&
		url3="nfs://127.0.0.1$PSEUDO?version=3&nfsport=$PORT&mountport=$MPORT"
	if command -v nfs-ls >/dev/null; then
		if [ -n "$url3" ]; then
			timeout 30 nfs-ls "$url3" >/dev/null 2>"$STATE/check.err" ||
				start_fail "nfs-ls through NFSv3 failed: $(head -c 300 "$STATE/check.err")"
		fi
		timeout 30 nfs-ls "$url4" >/dev/null 2>"$STATE/check.err" ||
			start_fail "nfs-ls through NFSv4 failed: $(head -c 300 "$STATE/check.err")"
	fi
	trap - INT TERM
	echo "$url4" >"$STATE/url4"
	[ -n "$url3" ] && echo "$url3" >"$STATE/url3"
	say "ganesha.nfsd (pid $gpid) exports $DIR as $PSEUDO on 127.0.0.1:$PORT" \
		"$([ "$V3" = 1 ] && echo "(v3 and v4; MOUNT on $MPORT)" || echo "(v4 only)")"
	[ -n "$url3" ] && echo "$url3"
	echo "$url4"
	return 0
}

do_status() {
	local p
	p=$(pid_of ganesha ganesha.nfsd)
	if [ -z "$p" ]; then
		echo "stopped"
		return 3
	fi
	echo "running: ganesha.nfsd pid $p"
	[ -f "$STATE/url3" ] && cat "$STATE/url3"
	[ -f "$STATE/url4" ] && cat "$STATE/url4"
	p=$(pid_of rpcbind rpcbind)
	[ -n "$p" ] && echo "rpcbind pid $p (started by start, own network namespace)"
	return 0
}

case $CMD in
start) do_start ;;
stop) do_stop ;;
status) do_status ;;
*) usage ;;
esac
