# netns_lib.sh — network namespaces for the multi-host test steps
# (sourced by netns_test.sh and dtx_bank_test.sh --netns).
#
# The caller sets P (a prefix unique to its run, e.g. sn$$) and T (its
# temporary directory), and calls nl_teardown from its exit trap.  A hub
# namespace ${P}hub holds bridge br0; each host namespace ${P}NAME gets
# eth0 with an address of 198.51.100.0/24 (the only addresses used), its
# peer hNAME on the bridge.  Nothing is routed out of the namespaces.
#
#   nl_hub         make the hub and its bridge: 0; 1 (the reason in
#                  $nl_why) when namespaces cannot be made here (not root,
#                  no 'ip netns add': the caller fails); 2 when the bridge
#                  could not be made (the caller fails)
#   host NAME IP   a host namespace linked to the hub
#   nsx NAME CMD   run CMD in ${P}NAME
#   nl_cut NAME    take NAME's link down (on the hub side); nl_mend NAME
#                  brings it back
#   nl_teardown    kill everything still running in our namespaces and
#                  delete them
made_ns=""
nl_why=""

nsx() { local n=$1; shift; ip netns exec "$P$n" "$@"; }

mkns() {
	ip netns add "$P$1" 2>"$T/nserr" || return 1
	made_ns="$made_ns $P$1"
	ip -n "$P$1" link set lo up
}

nl_hub() {
	if [ "$(id -u)" -ne 0 ] || ! mkns hub; then
		nl_why="need root and 'ip netns add': $(cat "$T/nserr" 2>/dev/null)"
		return 1
	fi
	ip -n "${P}hub" link add br0 type bridge &&
		ip -n "${P}hub" link set br0 up || return 2
}

host() {
	mkns "$1" || return 1
	ip -n "${P}hub" link add "h$1" type veth peer name eth0 netns "$P$1" &&
	ip -n "${P}hub" link set "h$1" master br0 &&
	ip -n "${P}hub" link set "h$1" up &&
	ip -n "$P$1" addr add "$2/24" dev eth0 &&
	ip -n "$P$1" link set eth0 up
}

nl_cut() { ip -n "${P}hub" link set "h$1" down; }
nl_mend() { ip -n "${P}hub" link set "h$1" up; }

nl_teardown() {
	local n p
	for n in $made_ns; do
		for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	done
	for n in $made_ns; do ip netns del "$n" 2>/dev/null; done
	made_ns=""
}
