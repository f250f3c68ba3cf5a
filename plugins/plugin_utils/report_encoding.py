# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's JSON encoding: strict, compact, once per finding.

Ansible hands the report tagged and lazy containers, and a host may hand it NaN, lone surrogates or
evidence nested without bound; everything the report writes goes through here first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DEPTH_CUT, MAX_DEPTH, json_safe, safe_text

# One compact encoder for every document: the C encoder (an indent would run the pure-Python one),
# built once (json.dumps with arguments builds a new one per call).
COMPACT = json.JSONEncoder(separators=(',', ':'), ensure_ascii=False)


def plain(value, depth_left=MAX_DEPTH):
    """Deep copy into plain, strict-JSON types (Ansible hands us tagged/lazy containers; a host
    may hand us NaN or lone surrogates). Exact types are checked first: this runs once per value
    of every finding of every host. Containers nested deeper than MAX_DEPTH levels below
    ``value`` become finding.DEPTH_CUT, as on the host: no evidence makes this recurse without bound."""
    kind = type(value)
    if kind is str:
        return safe_text(value)
    if kind is dict or isinstance(value, dict) or hasattr(value, 'items'):
        if depth_left <= 0:
            return DEPTH_CUT % MAX_DEPTH
        return dict((safe_text(str(k)), plain(v, depth_left - 1)) for k, v in value.items())
    if kind is list or isinstance(value, (list, tuple, set)):
        if depth_left <= 0:
            return DEPTH_CUT % MAX_DEPTH
        return [plain(v, depth_left - 1) for v in value]
    if value is None or kind is bool:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return json_safe(float(value))
    return safe_text(str(value))


def _reject(value):
    raise TypeError('%s is not JSON' % type(value).__name__)


def _make_strict_encode():
    """Strict compact JSON, UTF-8 text kept as is, keys in the order the host sent them.

    One C encoder object reused for every finding: JSONEncoder.encode builds a new one per call,
    which was a third of the report's time over 60,000 findings. No circular check (a result
    Ansible hands over cannot be cyclic; if one were, the recursion limit ends it, and
    RecursionError takes the careful path). Where the C encoder is missing or its private
    signature changed, the public encoder does the same work, slower."""
    try:
        from json.encoder import c_make_encoder, encode_basestring
        iterencode = c_make_encoder(None, _reject, encode_basestring, None, ':', ',', False, False, False)
        if ''.join(iterencode({'a': [1, 2.5, None, True, u'\u00e9']}, 0)) != u'{"a":[1,2.5,null,true,"\u00e9"]}':
            raise ValueError('unexpected output')
    except Exception:  # pylint: disable=broad-except
        return json.JSONEncoder(allow_nan=False, ensure_ascii=False, separators=(',', ':')).encode

    def encode(value):
        return ''.join(iterencode(value, 0))
    return encode


strict_encode = _make_strict_encode()


def plain_fast(value):
    """plain(), through the C encoder when the value already is strict JSON: no NaN (allow_nan
    refuses it), no lone surrogate (the UTF-8 encode refuses it), nothing but JSON types (the
    encoder refuses the rest). Anything else takes the careful path."""
    try:
        text = strict_encode(value)
        text.encode('utf-8')
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        return plain(value)
    return json.loads(text)
