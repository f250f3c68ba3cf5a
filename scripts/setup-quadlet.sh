#!/usr/bin/env bash
# Debian 13's Quadlet generator (podman 5.4.2), to validate the units the
# podman_quadlet role writes. Debian 12's podman 4.3.1 has no Quadlet; the
# generator from the trixie package needs only libc and runs here.
# Writes build/quadlet/usr/libexec/podman/quadlet.
source "$(dirname "$0")/lib.sh"
dest="${BUILD}/quadlet"
generator="${dest}/usr/libexec/podman/quadlet"
[ -x "${generator}" ] && exit 0
apt_dir="${BUILD}/apt-trixie"
mkdir -p "${apt_dir}/lists/partial" "${apt_dir}/cache/archives/partial" "${dest}"
echo 'deb http://deb.debian.org/debian trixie main' > "${apt_dir}/sources.list"
opts=(-o "Dir::Etc::SourceList=${apt_dir}/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
      -o "Dir::State::Lists=${apt_dir}/lists" -o "Dir::Cache=${apt_dir}/cache"
      -o "APT::Sandbox::User=root")
log "downloading Debian 13's podman package for its Quadlet generator"
as_root apt-get "${opts[@]}" -qq update
(cd "${apt_dir}" && as_root apt-get "${opts[@]}" -qq download podman)
deb="$(find "${apt_dir}" -maxdepth 1 -name 'podman_*.deb' | head -n1)"
[ -n "${deb}" ] || die "apt-get download podman found no package"
dpkg-deb -x "${deb}" "${apt_dir}/extract"
mkdir -p "$(dirname "${generator}")"
cp "${apt_dir}/extract/usr/libexec/podman/quadlet" "${generator}"
"${generator}" -version >&2 || die "the Quadlet generator does not run here"
