"""The contract a detection's SETTINGS spec keeps (module_utils/settings.py reads the values it declares).

Checked by the contract test for every detection; it lives with the tests so that no host receives it.
"""
from ansible_collections.homelab.postmortem.plugins.module_utils import settings

# What convert() reads.
TYPES = ('str', 'version', 'int', 'float', 'bool', 'list')
SPEC_KEYS = ('type', 'default', 'description', 'choices', 'elements', 'min', 'max', 'nullable')


def check_spec(spec):
    """Problems with one detection's SETTINGS spec."""
    problems = []
    for key, entry in spec.items():
        if not isinstance(entry, dict):
            problems.append('%s: spec is not a dict' % key)
            continue
        unknown = sorted(set(entry) - set(SPEC_KEYS))
        if unknown:
            problems.append('%s: unknown spec keys %s' % (key, ', '.join(unknown)))
        if entry.get('type') not in TYPES:
            problems.append('%s: type %r is not one of %s' % (key, entry.get('type'), ', '.join(TYPES)))
            continue
        if not str(entry.get('description') or '').strip():
            problems.append('%s: no description' % key)
        if entry['type'] == 'list' and entry.get('elements') not in ('str', 'int', 'version'):
            problems.append('%s: a list needs elements str, int or version' % key)
        if entry['type'] in ('int', 'float') or entry.get('elements') == 'int':
            for bound in ('min', 'max'):
                limit = entry.get(bound)
                if isinstance(limit, bool) or not isinstance(limit, (int, float)) or abs(limit) > settings.MAX_MAGNITUDE:
                    problems.append('%s: a number needs a %s (a number within 2**53), got %r' % (key, bound, limit))
        try:
            if settings.convert(entry, entry.get('default')) != entry.get('default'):
                problems.append('%s: default %r is not in its canonical form' % (key, entry.get('default')))
        except settings._Invalid as exc:  # pylint: disable=protected-access
            problems.append('%s: default %r is invalid: %s' % (key, entry.get('default'), exc))
    return problems
