#!/bin/sh
# Install what the cluster test fixtures (tests/fixtures/) need: a local Slurm
# (slurm-wlm with munge and the PMIx library its pmix plugin loads) and
# iproute2 (ip netns, veth, tc). Idempotent: does nothing when all is present.
# Must run as root, BEFORE any Slurm daemon is started (installing libpmix-dev
# while slurmd runs left a hung job step).
set -eu

PKGS="slurmctld slurmd slurm-client munge libpmix-dev iproute2"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "setup-cluster: all present ($PKGS)"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "setup-cluster: must run as root to install:$missing" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "setup-cluster: installing$missing"
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing

# The Debian packages may start system daemons from their postinst scripts
# where an init system runs; the fixtures start their own on private sockets
# and ports, so stop the system ones (no-ops in a container without init).
for svc in slurmctld slurmd munge; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
        systemctl stop "$svc" || true
    fi
done
echo "setup-cluster: done"
