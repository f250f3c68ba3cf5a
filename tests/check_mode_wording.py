"""Check mode says "would": no message of a check-mode run claims that something happened.

In `--check` nothing is written, restarted or rebooted, so a message that says a file "now loads"
an overlay, "was written" or a service "restarted" is false. The messages come from the
check_mode_messages callback (tests/callback_plugins/), which records every displayed message of a
check-mode run (debug, assert and fail messages, a module's msg, its warnings) as JSON lines.

"dropped" is not a claim: it names what a planned text leaves out (a unit's option, an overlay's parameter),
the same in both modes.

A message claims a change when one of its clauses holds a word of CLAIMS and nothing in that clause
makes it conditional or negative (MARKERS: "would", "nothing", "not", "already" ...): "config.txt now
loads gpio-ir-tx" is a claim, "config.txt would load gpio-ir-tx, nothing was written" is not.

    python tests/check_mode_wording.py MESSAGES.jsonl   exits 1 and lists the claims, 0 when there is none
"""
import json
import re
import sys

# Words that say something happened (or is so now because of this run).
CLAIMS = re.compile(
    r"\b(now|was written|were written|written|wrote|changed|loaded|reloaded|restarted|rebooted|"
    r"removed|deleted|fixed|re-created|recreated|created|replaced|converted|installed|enabled|started|stopped|"
    r"pinned|scaled|moved|backed up|updated|applied|promoted|discarded|rolled back|edited)\b",
    re.IGNORECASE)
# Words that make a clause conditional, negative, or about the state before this run.
MARKERS = re.compile(
    r"\b(would|nothing|not|no|never|none|nor|unchanged|untouched|without|already|0)\b|n't\b", re.IGNORECASE)
CLAUSE_ENDS = re.compile(r'[.!?](?:\s|$)|[;:,()\[\]\n]+|\s--?\s')

# What an audit measures or reports is not a role's message: findings describe the host as it is.
AUDIT_ACTIONS = ('audit_facts', 'audit_report', 'audit_validate')


def claims(message):
    """The clauses of ``message`` that claim a change ([] when it speaks conditionally or of nothing done)."""
    found = []
    for clause in CLAUSE_ENDS.split(str(message)):
        if CLAIMS.search(clause) and not MARKERS.search(clause):
            found.append(clause.strip())
    return found


def _is_audit(action):
    short = str(action or '').rsplit('.', 1)[-1]
    return short in AUDIT_ACTIONS or short.endswith('_facts')


def offending(records):
    """[(record, [claiming clauses])] for the records whose messages claim a change."""
    found = []
    for item in records:
        if _is_audit(item.get('action')):
            continue
        hits = [clause for message in item.get('messages') or [] for clause in claims(message)]
        if hits:
            found.append((item, hits))
    return found


def read(path):
    with open(path, encoding='utf-8') as handle:
        return [json.loads(line) for line in handle if line.strip()]


def main(argv):
    bad = []
    for path in argv[1:]:
        bad += offending(read(path))
    for item, hits in bad:
        print('check mode claims a change: %s | %s | %s: %s' % (
            item.get('host'), item.get('role') or '-', item.get('task'), ' / '.join(hits)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
