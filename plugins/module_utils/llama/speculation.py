# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a llama-server speculates, as common_speculative_init decides it for the server's build.

The speculative types --spec-type and --spec-default enable (common/speculative.cpp), read under
the rules of llama/build_rules.py that changed them (spec_type_list, spec_type_accumulates,
draft_needs_type, draft_type_from_gguf, draft_simple_throws).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.llama.args import (
    SPEC_DEFAULT, SPEC_DRAFT_HF, SPEC_DRAFT_MODEL, SPEC_TYPE, ValueRefused)


# common/speculative.cpp common_speculative_type_from_name_map (b11434 l.72-84; "draft" of b9113-b9245)
SPEC_TYPE_NAMES = ('none', 'draft', 'draft-simple', 'draft-eagle3', 'draft-mtp', 'draft-dflash', 'draft-dspark',
                   'ngram-simple', 'ngram-map-k', 'ngram-map-k4v', 'ngram-mod', 'ngram-cache')
# b9101 and earlier: one type, and only these (arg.cpp --spec-type handler at b9093 l.3571-3590)
SINGLE_SPEC_TYPES = ('none', 'ngram-cache', 'ngram-simple', 'ngram-map-k', 'ngram-map-k4v', 'ngram-mod')


def spec_types_from_names(value):
    """common_speculative_types_from_names (speculative.cpp l.2324-2340) over string_split(value, ','):
    'none' ends the list as [none] (later names are not even read); an unknown name is refused."""
    types = []
    for name in value.split(','):
        if name not in SPEC_TYPE_NAMES:
            raise ValueRefused('unknown speculative type: %r' % (name,))
        if name == 'none':
            return ['none']
        types.append(name)
    return types


def _spec_types(config, rules):
    """(the types --spec-type and --spec-default enable, 'none' first, in the order they were set;
    the problems of values this build refuses; where each was set)."""
    events = sorted(config.all(SPEC_TYPE) + config.all(SPEC_DEFAULT), key=lambda s: s.seq)
    types, problems = ['none'], []
    for setting in events:
        if setting.option is SPEC_DEFAULT:
            added = ['ngram-mod']
        elif not rules['spec_type_list']:
            if setting.value not in SINGLE_SPEC_TYPES:
                problems.append('%s: %r is not a type this build takes' % (setting.where, setting.value))
                continue
            added = [setting.value]
        else:
            try:
                added = spec_types_from_names(setting.value)
            except ValueRefused as exc:
                problems.append('%s: %s; llama-server does not start with it' % (setting.where, exc))
                continue
        types = types + added if rules['spec_type_accumulates'] else added
    return types, problems, [s.where for s in events]


def _before_draft_needs_type(enabled, draft, draft_where):
    """(on, reason) in the builds where a draft model alone turns speculation on."""
    if draft:
        return True, 'a draft model (%s) turns speculation on in this build' % draft_where
    on = any(t.startswith('ngram-') for t in enabled)
    return on, ('types %s' % ', '.join(enabled)) if on else 'no speculative type enabled'


def _type_from_draft(draft, draft_where, draft_hf, draft_hf_where, draft_kind):
    """(on, the type the draft's GGUF names or None, reason) for a draft and no --spec-type, in the
    builds that take the type from the draft."""
    if draft_hf:
        return None, None, ('a draft repository (%s) with no --spec-type: llama.cpp infers the type from what the '
                            'repository ships, which is not read here' % draft_hf_where)
    kind, why = draft_kind(draft) if draft_kind else (None, 'the draft GGUF was not read')
    if why:
        return None, None, ('a draft model with no --spec-type: llama.cpp infers the type from the draft GGUF (%s), '
                            'which could not be read: %s' % (draft, why))
    if kind:
        return True, kind, ('the draft GGUF %s is a %s model, so llama.cpp enables %s (speculative.cpp l.2351-2386)'
                            % (draft, kind, kind))
    return False, None, 'a draft model (%s) alone does not turn speculation on, and its GGUF names no speculative type' % draft_where


def _by_types(enabled, draft, draft_where, rules):
    """(on, reason) from the enabled types and the draft model, in the builds where a draft needs a type."""
    ngram = [t for t in enabled if t.startswith('ngram-')]
    drafts = [t for t in enabled if t.startswith('draft')]
    if 'draft-simple' in drafts and not draft:
        if rules.get('draft_simple_throws'):
            # measured on b11434 with ngram-mod,draft-simple: /slots speculative false, "failed to
            # initialize speculative decoding context: draft-simple requires a draft context"
            return False, ('draft-simple without a draft model: llama.cpp drops speculative decoding altogether at start '
                           '(speculative.cpp l.238-240)')
        if ngram:
            # b9464 to b10362 read the missing draft context instead; not told apart here
            return None, ('draft-simple without a draft model next to %s: whether the n-gram types still run is not '
                          'known for this build' % ', '.join(ngram))
        return False, 'draft-simple needs a draft model (-md); none is given'
    if ngram or (drafts and draft):
        return True, 'types %s' % ', '.join(enabled)
    if 'draft-mtp' in drafts:
        return None, 'draft-mtp without a draft model speculates when the model has MTP layers, which is not read here'
    if drafts:
        return False, '%s needs a draft model (-md); none is given' % ', '.join(drafts)
    return False, ('no speculative type enabled' if not draft else
                   'a draft model (%s) alone does not turn speculation on' % draft_where)


def speculation(config, draft_kind=None):
    """Whether this server speculates, as common_speculative_init decides it for its build.

    Returns a dict: on (True, False or None when it cannot be told), types (the enabled list),
    draft_model, reason, and the settings that decided it (where). ``draft_kind(path)`` reads a
    draft GGUF's own type ('draft-mtp', 'draft-dflash', 'draft-dspark', None) for builds that infer
    it; without it such a server is None.
    """
    rules = config.rules
    types, problems, where = _spec_types(config, rules)
    draft, draft_where, _s = config.value(SPEC_DRAFT_MODEL)
    draft_hf, draft_hf_where, _s = config.value(SPEC_DRAFT_HF)
    enabled = [t for t in types if t != 'none']
    result = {'types': enabled, 'where': where, 'draft_model': draft, 'problems': problems}
    if problems:
        result.update(on=None, reason='; '.join(problems))
    elif not rules['draft_needs_type']:
        on, reason = _before_draft_needs_type(enabled, draft, draft_where)
        result.update(on=on, reason=reason)
    elif types == ['none'] and (draft or draft_hf) and rules['draft_type_from_gguf']:
        on, kind, reason = _type_from_draft(draft, draft_where, draft_hf, draft_hf_where, draft_kind)
        result.update(on=on, reason=reason)
        if kind:
            result['types'] = [kind]
    else:
        on, reason = _by_types(enabled, draft, draft_where, rules)
        result.update(on=on, reason=reason)
    return result
