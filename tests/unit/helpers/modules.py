"""A module's main() run in this process, as Ansible runs it (arguments in, JSON result out), so that a
test can record what it does (filewrite.TRACE) and point it at fixture trees."""
import contextlib
import importlib
import io
import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes


def run_module(name, args, check_mode=False):
    """The result of homelab.postmortem.<name> with ``args`` (a dict); failed results are returned too."""
    payload = dict(args)
    if check_mode:
        payload['_ansible_check_mode'] = True
    basic._ANSIBLE_ARGS = to_bytes(json.dumps({'ANSIBLE_MODULE_ARGS': payload}))
    basic._ANSIBLE_PROFILE = 'legacy'
    module = importlib.import_module('ansible_collections.homelab.postmortem.plugins.modules.%s' % name)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        module.main()
    return json.loads(out.getvalue())
