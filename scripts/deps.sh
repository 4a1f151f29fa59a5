#!/usr/bin/env bash
# Install every build and test dependency of Strata: the Debian packages
# below (apt-get), then the test steps' Python virtual environment .venv
# with the pinned packages of tests/requirements.txt (scripts/venv.sh).
# Idempotent: prints nothing and installs nothing when all are present.
#
# iproute2: `ip netns` for the network-partition steps (netns_test.sh,
# dtx_bank_test.sh netns); awscli and s3cmd: the gateway's tests run
# Debian's own clients (/usr/bin/aws, /usr/bin/s3cmd, tests/tools.sh);
# python3-venv: .venv; curl: s3_presign.py fetches presigned URLs with it.
# etcd-server, etcd-client: the HA cluster map's etcd (`strata cluster up`
# starts one; ha/etcd_proc.h; etcdctl for looking at it by hand);
# libcurl4-openssl-dev: the library's etcd client (ha/etcd.c) speaks
# etcd's JSON gateway over HTTP with libcurl.  gdb: a cluster test that
# fails prints where a server still running is (tests/integ/cluster_lib.sh
# cl_diag: a hang found by a loaded run says where it waits).
# prometheus: its promtool checks the /metrics exposition of every process
# kind (tests/integ/metrics_test.sh; the package's server is not used).
# libsqlite3-dev: the HSM plugin's catalog (fdmi/hsm/hsm.c); sqlite3: its
# shell, for looking at a catalog by hand.
# liblua5.4-dev: the sandboxed Lua functions of function shipping
# (core/isc/isc_lua.c).
# fuse3, libfuse3-dev: strata-fuse (gateways/posix, low-level API) and
# fusermount3; nfs-ganesha, nfs-ganesha-vfs, rpcbind: the NFS export of a
# mount (scripts/nfs-export.sh); libnfs-utils: the user-space NFS client
# its test uses (no kernel NFS here); fio, rsync: tools run on a mount by
# tests/integ/posix_tools_test.sh.
# libhdf5-dev, hdf5-tools: the HDF5 VFD (gateways/hdf5, built against
# Debian's HDF5 1.10), `strata h5 import|export`, and h5dump in its tests;
# python3-dev: the Python binding's C extension (clovis/python).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pkgs=(build-essential pkg-config liblmdb-dev lmdb-utils libpmem2-dev
      libpmemobj-dev libisal-dev liburcu-dev libyaml-dev libcunit1-dev
      libfabric-dev libprotobuf-c-dev protobuf-c-compiler python3
      python3-venv libssl-dev clang-14 libclang-rt-14-dev
      libmicrohttpd-dev libjson-c-dev python3-boto3 awscli s3cmd iproute2
      curl etcd-server etcd-client libcurl4-openssl-dev gdb prometheus
      libsqlite3-dev sqlite3 liblua5.4-dev fuse3 libfuse3-dev nfs-ganesha
      nfs-ganesha-vfs rpcbind libnfs-utils fio rsync git libhdf5-dev
      hdf5-tools python3-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
		|| missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
"$here/venv.sh"
