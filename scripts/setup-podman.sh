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

# The tag carries a hash of the package list, so changing the list builds a new image.
packages="python3,systemd,systemd-sysv,dbus,procps,libgomp1,libssl3"
image="localhost/postmortem-systemd:12-$(printf '%s' "${packages}" | sha256sum | cut -c1-8)"
if ! podman image exists "${image}"; then
  log "building ${image} with mmdebstrap (about 30 s)"
  mmdebstrap --quiet --variant=minbase --include="${packages}" bookworm - \
    | podman import -q --change 'CMD ["/sbin/init"]' - "${image}" >/dev/null
fi
echo "POSTMORTEM_SYSTEMD_IMAGE=${image}" > "${BUILD}/podman.env"
