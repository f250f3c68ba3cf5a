#!/usr/bin/env bash
# A containers.conf that makes rootful podman 4.3.1 work on these machines
# (root lacks CAP_SYS_RESOURCE; cgroup v1 hybrid needs runc, not crun), and the
# systemd base image the integration tests and Molecule scenarios boot.
# Prints nothing on stdout; the Makefile exports CONTAINERS_CONF=build/containers.conf.
source "$(dirname "$0")/lib.sh"
conf="${BUILD}/containers.conf"
nofile="$(ulimit -Hn)"
pid_max="$(cat /proc/sys/kernel/pid_max)"
nproc="$(ulimit -Hu)"
if [ "${nproc}" = "unlimited" ] || [ "${nproc}" -gt "${pid_max}" ]; then nproc="${pid_max}"; fi
cat > "${conf}.tmp" <<CONF
[containers]
default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]

[engine]
runtime = "runc"
CONF
mv "${conf}.tmp" "${conf}"
export CONTAINERS_CONF="${conf}"

image="localhost/postmortem-systemd:12"
if ! podman image exists "${image}"; then
  log "building ${image} with mmdebstrap (about 30 s)"
  mmdebstrap --quiet --variant=minbase \
    --include=python3,systemd,systemd-sysv,dbus,libgomp1,procps \
    bookworm - | podman import -q --change 'CMD ["/sbin/init"]' - "${image}" >/dev/null
fi
