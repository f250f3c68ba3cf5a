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
build_image() {  # suite name [packages] -> prints the image reference
  local suite="$1" name="$2" packages="${3:-python3,systemd,systemd-sysv,dbus,procps,libgomp1,libssl3}"
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
# Debian 13 with podman 5.4.2 (which has Quadlet) and systemd, for the podman_quadlet scenario.
podman13="$(build_image trixie podman13 python3,systemd,systemd-sysv,dbus,procps,podman,runc,nftables,tar)"

# Debian 12 with python3-venv (a virtualenv with pip) and libpam-systemd (user managers of lingering
# users), for the audit_schedule scenario.
venv12="$(build_image bookworm venv12 python3,python3-venv,systemd,systemd-sysv,dbus,libpam-systemd,procps)"

# Debian 12 with sshd and Python, for the SSH test fleet (tests/e2e/ssh_fleet.py).
sshd12="$(build_image bookworm sshd python3,openssh-server,procps)"

# A tiny busybox image with known owners, for the podman detections' tests.
tiny_tar="${BUILD}/images/postmortem-tiny.tar"
mkdir -p "$(dirname "${tiny_tar}")"
if [ ! -f "${tiny_tar}" ]; then
  python3 "${REPO_ROOT}/scripts/make_tiny_image.py" "${tiny_tar}.tmp" && mv "${tiny_tar}.tmp" "${tiny_tar}"
fi
chmod 0644 "${tiny_tar}"
tiny_image=localhost/postmortem-tiny:1
podman image exists "${tiny_image}" || podman import -q --change 'CMD ["/bin/sh"]' "${tiny_tar}" "${tiny_image}" >/dev/null

# An ordinary user for rootless podman tests (subordinate IDs come with useradd).
rootless_user=pmrootless
if [ "$(id -u)" -eq 0 ] && ! id "${rootless_user}" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/sh "${rootless_user}"
fi
if [ "$(id -u)" -eq 0 ] && ! grep -q "^${rootless_user}:" /etc/subuid; then
  usermod --add-subuids 300000-365535 --add-subgids 300000-365535 "${rootless_user}"
fi
printf 'POSTMORTEM_SYSTEMD_IMAGE=%s\nPOSTMORTEM_DEBIAN13_IMAGE=%s\nPOSTMORTEM_PODMAN13_IMAGE=%s\nPOSTMORTEM_TINY_TAR=%s\nPOSTMORTEM_TINY_IMAGE=%s\nPOSTMORTEM_ROOTLESS_USER=%s\nPOSTMORTEM_SSHD_IMAGE=%s\nPOSTMORTEM_VENV_IMAGE=%s\n' \
  "${systemd12}" "${debian13}" "${podman13}" "${tiny_tar}" "${tiny_image}" "${rootless_user}" "${sshd12}" "${venv12}" > "${BUILD}/podman.env"
