#!/usr/bin/env bash
# Debian packages the tests need: podman (rootful, runc), mmdebstrap to build
# base images without a registry, chromium + chromedriver for the report test,
# docker.io (dockerd 20.10 for the swarm tests; the tests start their own daemons)
# with iputils-ping for the overlay_ping probe; fusefat and dosfstools for a real FAT boot partition;
# prometheus (promtool) and prometheus-node-exporter for the metrics file and the alert rules.
source "$(dirname "$0")/lib.sh"
packages=(openssh-client podman runc mmdebstrap uidmap slirp4netns fuse-overlayfs busybox-static chromium chromium-driver shellcheck
          docker.io iputils-ping fusefat dosfstools prometheus prometheus-node-exporter)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null | grep -q 'install ok installed' || missing+=("${pkg}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  as_root apt-get update -q >/dev/null
  # No service may start on install: the tests start their own dockerd on their own sockets.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "${policy}" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "${policy}" >/dev/null && as_root chmod 755 "${policy}"
    trap 'as_root rm -f "${policy}"' EXIT
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
