"""Ollama's version text and the order of its tags (plugins/module_utils/ollama/version.py).

The expected answers are upstream's tags, not our parser: each table below was made with
``git merge-base --is-ancestor COMMIT TAG`` (or ``git grep`` of the function) over the ollama/ollama
tags (history to 2026-08-21, newest tag v0.33.0-rc2 = fb3076099). Over all 628 release and rc tags,
``has('0.30.0-rc0')`` agrees with whether server/routes.go has the native dispatch.
"""
import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version

# tag -> whether it contains the change; each line: the change, its commit, and the tags read.
CONTAINS = {
    # PR 12460, 77060d462 "routes: structured outputs for gpt-oss": not in v0.12.4-rc0..rc6.
    '0.12.4-rc7': {'0.12.3': False, '0.12.4-rc0': False, '0.12.4-rc5': False, '0.12.4-rc6': False,
                   '0.12.4-rc7': True, '0.12.4': True},
    # PR 15612, e585ecd11 (Gemma 4 renderer resolution): from v0.21.0-rc0; v0.20.8-rc0 lacks it.
    '0.21.0-rc0': {'0.20.7': False, '0.20.8-rc0': False, '0.21.0-rc0': True, '0.21.0-rc1': True, '0.21.0': True},
    # PR 16457, 50bbda566 (12b, 12e9): first tag v0.30.3 (no rc of it); v0.30.2-rc0 and v0.30.2 lack it.
    '0.30.3': {'0.30.2-rc0': False, '0.30.2': False, '0.30.3': True, '0.30.4-rc0': True},
    # The native dispatch (chatModeForModel in ChatHandler): in every tag from v0.30.0-rc0 (the PR 16031
    # branch, 31e336791), not in v0.25.0-rc0, the tag before.
    '0.30.0-rc0': {'0.25.0-rc0': False, '0.30.0-rc0': True, '0.30.0-rc15': True, '0.30.0-rc31': True,
                   '0.30.0-rc32': True, '0.30.0': True},
    # PreferChatTemplate = true (server/images.go): from v0.30.0-rc22.
    '0.30.0-rc22': {'0.30.0-rc21': False, '0.30.0-rc22': True, '0.30.0-rc29': True},
    # func selectedModelTemplate (server/routes.go): from v0.30.0-rc23.
    '0.30.0-rc23': {'0.30.0-rc22': False, '0.30.0-rc23': True, '0.30.0-rc32': True, '0.30.0': True},
    # PR 7900, 630e7dc6f (schema formats): from v0.5.0-rc1 (there is no rc0); v0.4.7 lacks it.
    '0.5.0-rc1': {'0.4.7': False, '0.5.0-rc1': True, '0.5.0': True, '0.5.1': True},
    # PRs 8002/8055, 9039c821a and 18f6a98bd: first in v0.5.2; v0.5.2-rc0..rc3 lack both.
    '0.5.2': {'0.5.1': False, '0.5.2-rc0': False, '0.5.2-rc3': False, '0.5.2': True, '0.5.10': True},
}


@pytest.mark.parametrize('first,tag,contains', [(first, tag, contains) for first, table in sorted(CONTAINS.items())
                                                for tag, contains in sorted(table.items())])
def test_a_tag_has_exactly_the_changes_upstream_tagged_before_it(first, tag, contains):
    version, problem = ollama_version.parse(tag)
    assert problem is None
    assert version.has(first) is contains


@pytest.mark.parametrize('text,release,rc,commits', [
    ('0.30.3', (0, 30, 3), None, 0),
    ('v0.30.0-rc31', (0, 30, 0), 31, 0),
    # scripts/env.sh l.3 (git describe --tags --first-parent --long --dirty): what a scripted source build reports.
    ('0.30.3-0-gabc1234', (0, 30, 3), None, 0),
    ('0.30.3-12-gabc1234', (0, 30, 3), None, 12),
    ('0.30.0-rc7-3-gabc1234-dirty', (0, 30, 0), 7, 3),
    (' 0.33.0-rc2\n', (0, 33, 0), 2, 0),
])
def test_versions_as_ollama_builds_report_them(text, release, rc, commits):
    version, problem = ollama_version.parse(text)
    assert problem is None
    assert (version.release, version.rc, version.commits) == (release, rc, commits)


@pytest.mark.parametrize('text,fragment', [
    # version/version.go l.3 @ v0.33.0-rc2: `var Version string = "0.0.0"`, what `go build .` reports.
    ('0.0.0', 'version/version.go'),
    ('v-next', 'neither a release'),
    ('0.12.7-citest0', 'neither a release'),   # a CI tag, never a release
    ('abc1234', 'neither a release'),          # git describe --always without any tag
    (None, 'not a string'),
    (12, 'not a string'),
])
def test_versions_no_rule_can_be_chosen_for(text, fragment):
    version, problem = ollama_version.parse(text)
    assert version is None and fragment in problem


def test_a_build_after_an_older_tag_leaves_later_changes_open():
    version, _problem = ollama_version.parse('0.30.2-5-gabc1234')
    assert version.has('0.21.0-rc0') is True
    assert version.has('0.30.3') is None
    value, problem = ollama_version.choose(version, ((None, 'old', ''), ('0.30.3', 'new', 'the 12e9 threshold')))
    assert value is None and 'cannot be told' in problem and '0.30.3' in problem


def test_pre_releases_sort_before_their_release():
    keys = [ollama_version.parse(t)[0].key for t in ('0.12.4-rc6', '0.12.4-rc7', '0.12.4', '0.30.0-rc31', '0.30.0')]
    assert keys == sorted(keys)


@pytest.mark.parametrize('text,tag', [('0.35', '0.35.0'), ('0.35.0', '0.35.0'), ('v0.35.0-rc2', '0.35.0-rc2'),
                                      ('1', '1.0.0'), ('0.35.0~beta', None), ('0.35.0.1', None), ('', None)])
def test_a_version_setting_as_a_tag(text, tag):
    assert ollama_version.setting_tag(text) == tag
