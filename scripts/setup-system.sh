#!/usr/bin/env bash
# Debian packages the tests need: podman (rootful, runc), mmdebstrap to build
# base images without a registry, chromium + chromedriver for the report test.
source "$(dirname "$0")/lib.sh"
packages=(podman runc mmdebstrap uidmap slirp4netns fuse-overlayfs busybox-static chromium chromium-driver shellcheck)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null | grep -q 'install ok installed' || missing+=("${pkg}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  as_root apt-get update -q >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
