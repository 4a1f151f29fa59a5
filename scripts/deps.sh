#!/usr/bin/env bash
# Install every build and test dependency of Strata from Debian packages.
# Idempotent: prints nothing and installs nothing when all are present.
set -euo pipefail
pkgs=(build-essential pkg-config liblmdb-dev lmdb-utils libpmem2-dev
      libpmemobj-dev libisal-dev liburcu-dev libyaml-dev libcunit1-dev
      libfabric-dev libprotobuf-c-dev protobuf-c-compiler python3
      libssl-dev clang-14 libclang-rt-14-dev libmicrohttpd-dev python3-boto3
      awscli s3cmd)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
		|| missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
