"""Assemble the docs site's source tree (scripts/docs.sh runs it, then antsibull-docs and Sphinx).

Writes into the directory given:
- index.rst: the start page, with a table of contents made from what exists (every detection in
  registry order, the other pages of docs/, every playbook), so a new page needs no edit here;
- docs/ (its pages and any file they link), README.md and CHANGELOG.rst, copied (their relative links
  then resolve as in a checkout);
- playbooks/<name>.rst: each playbook's header comment, its plays, and the variables it reads
  (plugins/module_utils/audit_variables.py VARIABLES, the list audit_validate checks a run against).
antsibull-docs writes collections/ (every module and role) beside them.

Usage: python scripts/docsite.py DEST
"""
import os
import shutil
import sys

import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDES = ('architecture', 'performance', 'awx')


def _collection():
    path = os.environ.get('POSTMORTEM_COLLECTIONS_PATH', os.path.join(REPO_ROOT, 'build', 'collections'))
    sys.path.insert(0, path)
    from ansible_collections.homelab.postmortem.plugins.module_utils import audit_variables, registry
    return audit_variables, registry


def _rst_text(text):
    return text.replace('\\', '\\\\').replace('*', '\\*').replace('`', '\\`').replace('_', '\\_')


def _literal(value):
    return '``%s``' % yaml.safe_dump(value, default_flow_style=True, width=1000).strip().replace('\n...', '')


def header_comment(text):
    """The comment lines at the top of a playbook, before the first play, without their '#'."""
    lines = []
    for line in text.splitlines():
        if line.strip() == '---' and not lines:
            continue
        if not line.startswith('#'):
            break
        lines.append(line[2:] if line.startswith('# ') else line[1:])
    return '\n'.join(lines).strip('\n')


def imports(text):
    """The playbooks (file names) a playbook imports."""
    return [play.get('ansible.builtin.import_playbook') or play.get('import_playbook')
            for play in (yaml.safe_load(text) or [])
            if 'ansible.builtin.import_playbook' in play or 'import_playbook' in play]


def playbook_page(name, text, variables, imported_by=()):
    plays = yaml.safe_load(text) or []
    title = 'homelab.postmortem.%s' % name
    lines = ['.. _playbook_%s:' % name, '', title, '=' * len(title), '']
    if imported_by:
        lines += ['Imported by %s; not meant to be run on its own.' % ' and '.join(
            ':ref:`homelab.postmortem.%s <playbook_%s>`' % (p, p) for p in imported_by), '']
    else:
        lines += ['Run it with ``ansible-playbook %s -i INVENTORY``.' % title, '']
    comment = header_comment(text)
    if comment:
        lines += ['.. code-block:: text', '']
        lines += [('    ' + line).rstrip() for line in comment.splitlines()]
        lines.append('')
    lines += ['Plays', '-----', '']
    for play in plays:
        if 'import_playbook' in play or 'ansible.builtin.import_playbook' in play:
            imported = play.get('ansible.builtin.import_playbook') or play.get('import_playbook')
            lines.append('#. %s (imports :ref:`%s <playbook_%s>`)' % (
                _rst_text(play.get('name', imported)), imported, os.path.splitext(imported)[0]))
        else:
            lines.append('#. %s (hosts: ``%s``)' % (_rst_text(play.get('name', '')), play.get('hosts')))
    lines.append('')
    mine = [v for v in variables if name in v[3]]
    lines += ['Variables', '---------', '']
    if mine:
        lines += ['All optional. A ``postmortem_*`` variable that is not listed here stops the run before any '
                  'host is contacted.', '']
        lines += ['.. list-table::', '   :header-rows: 1', '', '   * - variable', '     - type', '     - default',
                  '     - meaning']
        for var_name, kind, default, _playbooks, meaning in mine:
            lines += ['   * - ``%s``' % var_name, '     - %s' % kind, '     - %s' % _literal(default),
                      '     - %s' % _rst_text(meaning)]
    else:
        lines.append('It reads the variables of the playbook that imports it.')
    lines.append('')
    return '\n'.join(lines)


def index_page(detections, other_pages, playbooks):
    def toctree(caption, entries, maxdepth=1):
        return ['.. toctree::', '   :maxdepth: %d' % maxdepth, '   :caption: %s' % caption, ''] + \
            ['   %s' % e for e in entries] + ['']
    lines = ['homelab.postmortem', '==================', '',
             'Find and fix silent failures on homelab and small-fleet hosts. Start with the :doc:`overview <README>`;',
             'each detection has a page that says what breaks, how it is detected and how to fix it.', '']
    lines += toctree('Overview', ['README', 'CHANGELOG'])
    lines += toctree('Detections', ['docs/%s' % d for d in detections])
    lines += toctree('Guides and fixes', ['docs/%s' % p for p in other_pages])
    lines += toctree('Playbooks', ['playbooks/%s' % p for p in playbooks])
    lines += toctree('Modules and roles', ['collections/homelab/postmortem/index', 'collections/index_module',
                                           'collections/index_role', 'collections/environment_variables'])
    return '\n'.join(lines)


def main(dest):
    audit_variables, registry = _collection()
    os.makedirs(os.path.join(dest, 'docs'), exist_ok=True)
    os.makedirs(os.path.join(dest, 'playbooks'), exist_ok=True)
    pages = sorted(os.path.splitext(f)[0] for f in os.listdir(os.path.join(REPO_ROOT, 'docs')) if f.endswith('.md'))
    # The whole folder: a page may link a file beside it (an example to download), not only other pages.
    shutil.copytree(os.path.join(REPO_ROOT, 'docs'), os.path.join(dest, 'docs'), dirs_exist_ok=True)
    for name in ('README.md', 'CHANGELOG.rst'):
        shutil.copyfile(os.path.join(REPO_ROOT, name), os.path.join(dest, name))
    detections = [d.ID for d in registry.DETECTIONS]
    missing = [d for d in detections if d not in pages]
    if missing:
        raise SystemExit('no docs page for %s' % ', '.join(missing))
    others = [p for p in GUIDES if p in pages] + [p for p in pages if p not in detections and p not in GUIDES]
    playbooks = sorted(os.path.splitext(f)[0] for f in os.listdir(os.path.join(REPO_ROOT, 'playbooks'))
                       if f.endswith('.yml'))
    texts = {}
    for name in playbooks:
        with open(os.path.join(REPO_ROOT, 'playbooks', name + '.yml'), encoding='utf-8') as handle:
            texts[name] = handle.read()
    for name in playbooks:
        imported_by = [other for other in playbooks if name + '.yml' in imports(texts[other])]
        with open(os.path.join(dest, 'playbooks', name + '.rst'), 'w', encoding='utf-8') as handle:
            handle.write(playbook_page(name, texts[name], audit_variables.VARIABLES, imported_by))
    with open(os.path.join(dest, 'index.rst'), 'w', encoding='utf-8') as handle:
        handle.write(index_page(detections, others, playbooks))


if __name__ == '__main__':
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
