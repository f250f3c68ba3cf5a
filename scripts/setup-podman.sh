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

# Base images, built without a registry. The tag carries a hash of the
# package list, so changing the list builds a new image.
build_image() {  # suite name -> prints the image reference
  local suite="$1" name="$2" packages="python3,systemd,systemd-sysv,dbus,procps,libgomp1,libssl3"
  local image
  image="localhost/postmortem-${name}:$(printf '%s %s' "${suite}" "${packages}" | sha256sum | cut -c1-8)"
  if ! podman image exists "${image}"; then
    log "building ${image} (${suite}) with mmdebstrap (about 40 s)"
    mmdebstrap --quiet --variant=minbase --include="${packages}" "${suite}" - \
      | podman import -q --change 'CMD ["/sbin/init"]' - "${image}" >/dev/null
  fi
  echo "${image}"
}
systemd12="$(build_image bookworm debian12)"
debian13="$(build_image trixie debian13)"
printf 'POSTMORTEM_SYSTEMD_IMAGE=%s\nPOSTMORTEM_DEBIAN13_IMAGE=%s\n' "${systemd12}" "${debian13}" > "${BUILD}/podman.env"
