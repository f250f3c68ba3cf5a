# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one protocol every fix module follows: plan, check-mode diff, apply, verify, roll back.

A fix (a :class:`Fix`) says *what* it changes; :func:`run` decides *when*, the same way for every
module, so that no module holds a workflow of its own:

1. ``plan()`` reads the host and returns a :class:`Plan`: the files to write or remove, the diff of
   anything else it changes, and the module's own result fields. Nothing is changed; a problem is a
   :class:`FixFailed` (or any HostInputError) and the module fails saying nothing was changed.
2. A plan that changes nothing ends here. A planned file on a read-only mount (statvfs's ST_RDONLY) ends
   a run here too, changing nothing, and in check mode adds that to the message and a warning. Check mode
   ends here: the result carries the exact diff.
3. ``apply(plan, write)`` makes the change. ``write(writes, backup)`` is filewrite.write_all bound
   to the module (all files or none, backed up first, crash-safe); component code gets it as a
   plain callable and never sees the AnsibleModule.
4. ``verify(plan)`` says what is not as planned ([] when all is).
5. ``roll_back(plan, write)`` puts back what apply changed when verification fails, and says what
   could not be put back ([] when everything was).
6. ``finish(plan)`` drops what a roll back would have needed, once the change is verified.

The file steps (write, read back, put back) are the defaults, so a fix that only rewrites files
implements ``plan`` alone. Every module returns the same keys: changed, diff, backups, verified,
rolled_back, msg, and its own fields from ``Plan.result``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError


class FixFailed(HostInputError):
    """A step could not be done; the message says what was changed. ``rolled_back``: whether what had
    been applied was put back; ``fields``: result fields to return with the failure."""

    def __init__(self, message, rolled_back=False, **fields):
        super(FixFailed, self).__init__(message)
        self.rolled_back = rolled_back
        self.fields = fields


class Plan(object):
    """What a fix will change.

    ``writes``: [(path, text before or None when absent, text after or None to remove)], files
    this protocol writes and removes; ``diff``: [{before_header, after_header, before, after}] of
    changes that are not files (the file writes' diff is added); ``changed``: whether anything
    changes (default: whether there is a write or a diff); ``result``: the module's own fields;
    ``msg``: what the plan found; ``warnings``: for the module to show; ``backup``: whether the
    files written are backed up first; ``targets``: paths apply creates or replaces in steps of its own
    (an archive, a directory, a unit file written between other steps), asked with ``writes`` whether
    their mount is read-only; ``details``: anything apply, verify and roll_back need.
    """

    def __init__(self, writes=(), diff=(), changed=None, result=None, msg='', warnings=(), backup=True, targets=(),
                 **details):
        self.writes = [(path, before, after) for path, before, after in writes if before != after]
        self.diff = [file_diff(path, before, after) for path, before, after in self.writes] + list(diff)
        self.changed = bool(self.writes or diff) if changed is None else bool(changed)
        self.result = dict(result or {})
        self.msg = msg
        self.warnings = list(warnings)
        self.backup = backup
        self.targets = list(targets)
        self.details = details
        # Why the planned files cannot be written (a read-only mount), once the protocol has asked.
        self.cannot_write = ''


def file_diff(path, before, after):
    """One file's diff as Ansible shows it (an absent file is empty)."""
    return {'before_header': path, 'after_header': path, 'before': before or '', 'after': after or ''}


def write_files(writes, write, backup):
    """Write the changed files (``write``: filewrite.write_all bound to the module), then remove those
    planned away. Returns the backups."""
    kept = [(path, before, after) for path, before, after in writes if after is not None]
    backups = write(kept, backup) if kept else []
    removed = [path for path, _before, after in writes if after is None]
    if removed:
        filewrite.remove_files(removed)
    return backups or []


def files_as_planned(writes):
    """What is not as planned: each file reads back as its planned text, or is gone when removed."""
    problems = []
    for path, _before, after in writes:
        try:
            now = hostio.read_text_if_present(path)
        except hostio.ReadProblem as problem:
            problems.append('%s cannot be read back: %s' % (path, problem.reason))
            continue
        if now != after:
            problems.append('%s is %s' % (path, 'still there' if after is None else
                                          'missing' if now is None else 'not the planned text'))
    return problems


def read_only_mounts(paths):
    """{mount point: [planned paths on it]} for the planned paths whose mount is read-only."""
    found = {}
    for path in paths:
        mount = hostio.read_only_mount(path)
        if mount:
            found.setdefault(mount, []).append(path)
    return found


def cannot_write(fix, blocked):
    """Why the planned files cannot be written, with what the fix knows of such a mount."""
    where = '; '.join('%s (%s)' % (mount, ', '.join(paths)) for mount, paths in sorted(blocked.items()))
    hints = [fix.read_only_hint(mount) for mount in sorted(blocked)]
    return 'mounted read-only: %s%s' % (where, ''.join('. ' + hint for hint in hints if hint))


def write_failed(msg, backups, restored, not_restored):
    """filewrite.write_all's failure as a FixFailed: rolled back when files had been replaced and each is back
    as it was (nothing replaced: nothing to roll back); changed while one could not be put back."""
    raise FixFailed(msg, rolled_back=bool(restored) and not not_restored, backups=backups, restored=restored,
                    not_restored=not_restored, changed=bool(not_restored))


def put_back(writes, write):
    """Each file as it was before (written back, or removed when it did not exist); what could not be."""
    left = []
    for path, before, after in reversed(writes):
        try:
            if before is None:
                filewrite.remove_files([path])
            else:
                write([(path, after, before)], False)
        except (IOError, OSError) as exc:
            left.append('%s (%s)' % (path, exc.strerror or exc))
        except FixFailed as exc:
            left.append('%s (%s)' % (path, exc))
    return left


class Fix(object):
    """A fix module's change. Subclasses implement plan(); the file steps are the defaults."""

    def plan(self):
        raise NotImplementedError

    def apply(self, plan, write):
        """Make the change; returns the backups made. FixFailed says what is left."""
        return write_files(plan.writes, write, plan.backup)

    def verify(self, plan):
        """[what is not as planned]; [] when the change holds."""
        return files_as_planned(plan.writes)

    def roll_back(self, plan, write):
        """Put back what apply changed; [what could not be put back]."""
        return put_back(plan.writes, write)

    def finish(self, plan):
        """After a verified change: drop what a roll back would have needed."""

    def found(self):
        """Result fields that say what was found and done before a failure, when plan() raised."""
        return {}

    def read_only_hint(self, mount):
        """What to do about a read-only ``mount`` the planned files are on, in this fix's words; '' for nothing."""
        return ''


def drive(fix, check_mode, write):
    """The protocol without Ansible: (plan, {backups, verified}). A failure is raised (HostInputError,
    FixFailed when the change did not hold); after the plan its ``fields`` carry the plan's result."""
    plan = fix.plan()
    outcome = {'backups': [], 'verified': False}
    if not plan.changed:
        return plan, outcome
    try:
        return _change(fix, plan, outcome, check_mode, write)
    except HostInputError as exc:
        # What the plan warned of (a parameter dropped, say) is still true of a change that failed.
        exc.warnings = plan.warnings
        raise


def _change(fix, plan, outcome, check_mode, write):
    """After a plan that changes something: the read-only mounts, check mode's end, apply, verify, roll back."""
    # Asked before anything changes, so that check mode says the run would fail and the run changes nothing
    # (a fix that also renames containers or re-creates models would otherwise stop half way).
    blocked = read_only_mounts([path for path, _before, _after in plan.writes] + plan.targets)
    if blocked:
        plan.cannot_write = cannot_write(fix, blocked)
        if not check_mode:
            raise FixFailed('%s; nothing was changed' % plan.cannot_write, **dict(plan.result, diff=plan.diff))
        plan.warnings.append('the change cannot be written now: %s' % plan.cannot_write)
    if check_mode:
        return plan, outcome
    try:
        outcome['backups'] = fix.apply(plan, write) or []
    except HostInputError as exc:
        fields = dict(plan.result, diff=plan.diff)
        fields.update(getattr(exc, 'fields', None) or {})
        exc.fields = fields
        raise
    problems = fix.verify(plan)
    if problems:
        left = fix.roll_back(plan, write)
        what_now = ('could NOT be put back: %s' % '; '.join(left)) if left else 'everything was put back as it was'
        fields = dict(plan.result, diff=plan.diff, problems=problems, changed=bool(left))
        raise FixFailed('the change did not hold (%s); %s' % ('; '.join(problems), what_now), rolled_back=not left,
                        **fields)
    fix.finish(plan)
    outcome['verified'] = True
    return plan, outcome


def blank_result():
    """The keys every fix module returns."""
    return {'changed': False, 'diff': [], 'backups': [], 'verified': False, 'rolled_back': False, 'msg': ''}


def run(module, fix):
    """Run ``fix`` through the protocol in ``module`` and exit the module with its result."""
    result = blank_result()

    def write(writes, backup):
        return filewrite.write_all(module, writes, backup, fail=write_failed)

    try:
        plan, outcome = drive(fix, module.check_mode, write)
    except HostInputError as exc:
        for warning in getattr(exc, 'warnings', None) or ():
            module.warn(warning)
        result.update(fix.found())
        result.update(getattr(exc, 'fields', None) or {})
        result.update(msg=str(exc), rolled_back=getattr(exc, 'rolled_back', False))
        return module.fail_json(**result)
    for warning in plan.warnings:
        module.warn(warning)
    result.update(outcome)
    # A fix's own fields come after: a step that only checks (pi_ir_tx_fix step=verify) says verified itself.
    result.update(plan.result)
    if plan.msg:
        message = plan.msg
    elif not plan.changed:
        message = 'nothing to change'
    elif module.check_mode:
        message = 'check mode: the diff is what would change; nothing was changed'
    else:
        message = 'changed, and read back as planned'
    if plan.cannot_write:
        message += '; it cannot be written now: %s' % plan.cannot_write
    result.update(changed=plan.changed, diff=plan.diff, msg=message)
    return module.exit_json(**result)
