#!/usr/bin/env bash
# ansible-test sanity wants the collection at .../ansible_collections/homelab/postmortem,
# so run it on a copy of the files git knows about (tracked, or new and not ignored).
# Ignore files stay empty: a sanity failure is fixed in the code.
# SANITY_VENV and SANITY_PYTHON choose the ansible-core and Python (scripts/core-matrix.sh runs
# 2.20 and 2.21 on 3.12 this way); the default is 2.19 on the system's Python 3.11.
source "$(dirname "$0")/lib.sh"
dest="${BUILD}/sanity/ansible_collections/homelab/postmortem"
rm -rf "${BUILD}/sanity" && mkdir -p "${dest}"
(cd "${REPO_ROOT}" && git ls-files -z --cached --others --exclude-standard | \
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done | \
  tar --null -T - -cf -) | tar -C "${dest}" -xf -
for f in "${dest}"/tests/sanity/ignore-*.txt; do
  [ -s "$f" ] && die "$(basename "$f") is not empty: fix the code instead"
done
cd "${dest}" || exit 1
# The copy sits inside this repository's ignored build/ directory; give it a
# repository of its own so ansible-test lists its files instead of none.
git init -q . && git add -A && git -c user.name=sanity -c user.email=sanity@localhost commit -qm sanity
# A virtualenv of its own: --requirements installs ansible-test's pinned tools
# (pylint, yamllint, ...) and they must not fight ansible-lint's in .venv.
# (--venv cannot work here: it bootstraps pip from a host we cannot reach.)
sanity_venv="${SANITY_VENV:-${BUILD}/venv-sanity}"
sanity_python="${SANITY_PYTHON:-3.11}"
[ -x "${sanity_venv}/bin/ansible-test" ] || {
  [ -z "${SANITY_VENV:-}" ] || die "${SANITY_VENV} has no ansible-test"
  "${PYTHON}" -m venv "${sanity_venv}"
  "${sanity_venv}/bin/pip" install --disable-pip-version-check -q -r "${REPO_ROOT}/requirements/controller.txt"
}
# The pip version ansible-test pins for its virtualenvs (get_venv_packages()).
pip_version="$(grep -oP "^\s+pip='\K[0-9.]+" "$("${sanity_venv}/bin/python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py" | head -n1)"
[ -n "${pip_version}" ] || die "cannot tell which pip version ansible-test bootstraps"
mkdir -p "${HOME}/.ansible/test/cache"
cp "${REPO_ROOT}/scripts/get_pip_standin.py" "${HOME}/.ansible/test/cache/get_pip_${pip_version//./_}.py"
log "ansible-test sanity: ansible-core $("${sanity_venv}/bin/python" -c 'from ansible.release import __version__; print(__version__)'), python ${sanity_python}"
"${sanity_venv}/bin/ansible-test" sanity --color no --requirements --python "${sanity_python}" "$@"
