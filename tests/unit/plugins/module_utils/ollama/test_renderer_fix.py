"""ollama/renderer_fix (the ollama_gemma4_renderer_fix module's plan, backups, apply, verify and roll
back) with a fake client over the Ollama stand-in's models (tests/ollama_standin.py: /api/show as
GetModelInfo builds it, /api/create as create.go @ v0.33.0-rc2 l.66-67 and l.169-173 applies it, an
empty renderer or parser keeping the model's own). No Ollama binary can run here.

What each failure must leave, and say: a model that was re-created and verified stays so, and is named
with its backup; the model that failed is named with what happened to it; the rest are named as not
attempted; a backup that cannot be written changes nothing.
"""
import copy
import json
import os
import sys

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer_fix

from ....helpers.paths import TESTS_DIR

sys.path.insert(0, TESTS_DIR)
from ollama_standin import OllamaStandIn, gemma4  # noqa: E402  pylint: disable=wrong-import-position

NAMES = ['first:latest', 'second:latest', 'third:latest']


class FakeClient:
    """renderer_fix.Client's three calls on the stand-in's models, without HTTP; ``broken`` maps (call, model)
    to a ProbeFailure raised instead (before the call does anything, or ``after`` it did its work)."""

    def __init__(self, standin):
        self.standin = standin
        self.calls = []
        self.broken = {}

    def _hook(self, call, name, when):
        failure = self.broken.get((call, name, when))
        if failure:
            raise failure

    def version(self):
        return self.standin.version

    def show(self, name):
        self.calls.append(('show', name))
        self._hook('show', name, 'before')
        if name not in self.standin.models:
            raise loopback_http.ProbeFailure('model %s not found' % name, 404)
        return copy.deepcopy(self.standin.show(name))

    def create(self, body):
        self.calls.append(('create', body['model'], body.get('renderer'), body.get('parser')))
        self._hook('create', body['model'], 'before')
        status, answer = self.standin.create(body)
        if status != 200:
            raise loopback_http.ProbeFailure('/api/create answered HTTP %d: %s' % (status, answer['error']), status)
        self._hook('create', body['model'], 'after')


@pytest.fixture
def standin():
    models = dict((name, dict(gemma4('11.9B'), system='You are %s.' % name.split(':', maxsplit=1)[0], parameters={'num_ctx': 8192},
                              license='Gemma ToU')) for name in NAMES)
    models['pinned:latest'] = gemma4('11.9B', renderer='gemma4-large')
    server = OllamaStandIn('0.33.0-rc2', models)
    yield server
    server.close()


def stored(standin, name):
    return standin.models[name].get('renderer')


def test_plan_changes_nothing_and_says_what_would_change(standin):
    client = FakeClient(standin)
    plans = renderer_fix.plan(client, NAMES + ['pinned:latest'], 'gemma4-large')
    assert [p.changed for p in plans] == [True, True, True, False]
    assert plans[0].entry() == {'model': 'first:latest', 'before_renderer': 'gemma4', 'after_renderer': 'gemma4-large',
                                'changed': True}
    diff = plans[0].diff()
    assert 'RENDERER gemma4\n' in diff['before'] and 'RENDERER gemma4-large\n' in diff['after']
    assert diff['after'].replace('RENDERER gemma4-large', 'RENDERER gemma4') == diff['before']
    assert [c[0] for c in client.calls] == ['show'] * 4 and standin.creates == []


def test_apply_pins_keeps_every_field_backs_up_first_and_is_idempotent(standin, tmp_path):
    client = FakeClient(standin)
    plans = renderer_fix.plan(client, NAMES, 'gemma4-large')
    before = dict((name, standin.show(name)) for name in NAMES)
    renderer_fix.write_backups(plans, str(tmp_path / 'bk'))
    assert standin.creates == []   # every backup before the first create
    entries = renderer_fix.apply(client, plans)
    assert [e['after_renderer'] for e in entries] == ['gemma4-large'] * 3
    for name, plan in zip(NAMES, plans):
        assert stored(standin, name) == 'gemma4-large'
        after = standin.show(name)
        assert [after.get(k) for k in renderer_fix.KEPT] == [before[name].get(k) for k in renderer_fix.KEPT]
        with open(plan.backup) as handle:
            assert handle.read() == before[name]['modelfile']
        with open(plan.backup[:-len('.Modelfile')] + '.show.json') as handle:
            assert json.load(handle) == before[name]
        assert oct(os.stat(plan.backup).st_mode & 0o777) == '0o600'
    assert oct(os.stat(str(tmp_path / 'bk')).st_mode & 0o777) == '0o700'
    again = renderer_fix.plan(client, NAMES, 'gemma4-large')
    assert not any(p.changed for p in again)


def test_a_create_failure_on_the_second_model_names_it_and_says_the_first_was_re_created(standin, tmp_path):
    standin.fail_create['second:latest'] = (500, {'error': 'disk full'})
    client = FakeClient(standin)
    plans = renderer_fix.plan(client, NAMES, 'gemma4-large')
    renderer_fix.write_backups(plans, str(tmp_path / 'bk'))
    with pytest.raises(renderer_fix.FixFailed) as failed:
        renderer_fix.apply(client, plans)
    message = str(failed.value)
    assert message.startswith('could not pin model second:latest: /api/create failed: /api/create answered HTTP 500: '
                              'disk full; second:latest: it is unchanged; its backup is %s' % plans[1].backup), message
    assert ('already re-created with RENDERER gemma4-large and verified, and left so: first:latest (backup %s)'
            % plans[0].backup) in message
    assert message.endswith('not attempted: third:latest')
    assert [stored(standin, n) for n in NAMES] == ['gemma4-large', 'gemma4', 'gemma4']
    assert [e['model'] for e in failed.value.models] == NAMES


def test_a_create_that_keeps_losing_a_field_cannot_be_put_back_and_says_so(standin):
    """Every create of first:latest drops its system prompt (lossy_create): the pin is not verified, the roll
    back is tried and fails the same way, and the message says both."""
    standin.lossy_create.add('first:latest')
    client = FakeClient(standin)
    plans = renderer_fix.plan(client, NAMES, 'gemma4-large')
    with pytest.raises(renderer_fix.FixFailed) as failed:
        renderer_fix.apply(client, plans)
    message = str(failed.value)
    assert message.startswith('could not pin model first:latest: it was re-created, but its system changed; '
                              'first:latest could NOT be put back as it was: its system changed'), message
    assert [c[2] for c in client.calls if c[0] == 'create'] == ['gemma4-large', 'gemma4']
    assert 'no other model was changed' in message and message.endswith('not attempted: second:latest, third:latest')


def test_a_damaged_model_is_re_created_as_it_was(standin):
    """The first create loses the system prompt; the roll back (a second create with the old renderer and
    fields) restores it."""
    client = FakeClient(standin)
    plans = renderer_fix.plan(client, NAMES[:1], 'gemma4-large')
    original = copy.deepcopy(standin.models['first:latest'])

    class LosesOnce(FakeClient):
        def create(self, body):
            super().create(body)
            if body['renderer'] == 'gemma4-large':
                self.standin.models[body['model']].pop('system', None)
    client = LosesOnce(standin)
    with pytest.raises(renderer_fix.FixFailed) as failed:
        renderer_fix.apply(client, plans)
    assert str(failed.value).startswith('could not pin model first:latest: it was re-created, but its system changed; '
                                        'first:latest was re-created again as it was (RENDERER gemma4)'), str(failed.value)
    restored = standin.models['first:latest']
    assert (restored['renderer'], restored['parser'], restored['system']) == (
        original['renderer'], original['parser'], original['system'])


def test_a_model_without_a_renderer_cannot_be_put_back_and_says_how(standin, tmp_path):
    standin.models['plain:latest'] = dict(gemma4('11.9B', renderer=None), system='Hi.')
    standin.lossy_create.add('plain:latest')
    client = FakeClient(standin)
    plans = renderer_fix.plan(client, ['plain:latest'], 'gemma4-large')
    renderer_fix.write_backups(plans, str(tmp_path / 'bk'))
    with pytest.raises(renderer_fix.FixFailed) as failed:
        renderer_fix.apply(client, plans)
    assert ('plain:latest could NOT be put back as it was: /api/create cannot remove a renderer (create.go keeps the '
            "model's own when none is given); restore it with ollama create plain:latest -f %s" % plans[0].backup) \
        in str(failed.value)


def test_a_create_that_times_out_after_doing_its_work_is_no_failure(standin):
    client = FakeClient(standin)
    client.broken[('create', 'first:latest', 'after')] = loopback_http.ProbeFailure('did not answer within 1.0 s',
                                                                                    finding_status='unknown')
    plans = renderer_fix.plan(client, NAMES, 'gemma4-large')
    renderer_fix.apply(client, plans)
    assert [stored(standin, n) for n in NAMES] == ['gemma4-large'] * 3


def test_a_failure_whose_outcome_cannot_be_read_says_so(standin):
    client = FakeClient(standin)
    plans = renderer_fix.plan(client, NAMES, 'gemma4-large')
    client.broken[('create', 'first:latest', 'before')] = loopback_http.ProbeFailure('x/api/create did not answer',
                                                                                     finding_status='unknown')
    client.broken[('show', 'first:latest', 'before')] = loopback_http.ProbeFailure('x/api/show refused')
    with pytest.raises(renderer_fix.FixFailed) as failed:
        renderer_fix.apply(client, plans)
    assert str(failed.value).startswith('could not pin model first:latest: /api/create failed: x/api/create did not '
                                        'answer; first:latest: whether it changed cannot be told: x/api/show refused')


@pytest.mark.parametrize('text,refusal', [
    ('0.21.0-rc0', None),
    ('0.33.0-rc2', None),
    ('0.21.0-3-gabc1234', None),
    ('0.20.7', 'Ollama 0.20.7 cannot pin a renderer: gemma4-small/-large exist from 0.21.0 on; upgrade Ollama first'),
    ('0.20.7-5-gabc1234', 'Ollama 0.20.7-5-gabc1234 cannot be told to have gemma4-small/-large (a build 5 commit(s) '
                          'after v0.20.7; they exist from 0.21.0 on)'),
    ('0.0.0', 'Ollama cannot pin a renderer here: it reports version 0.0.0'),
    (['0.30.0'], 'Ollama cannot pin a renderer here: it reports a version that is not a string'),
    ('9' * 5000, 'Ollama cannot pin a renderer here: it reports version'),
])
def test_the_version_check_is_upstreams_first_tag_with_the_renderers(text, refusal):
    """gemma4-small/-large come with PR 15612, first tag v0.21.0-rc0 (renderer.RULE_STEPS)."""
    found = renderer_fix.check_version(text)
    assert (found is None) if refusal is None else found.startswith(refusal), found


def test_the_parameters_text_becomes_create_parameters():
    assert renderer_fix.parameters_dict('num_ctx 8192\nstop "<turn|>"\nstop "<eos>"\ntemperature 0.7\nodd') == {
        'num_ctx': 8192, 'stop': ['<turn|>', '<eos>'], 'temperature': 0.7}


def test_backup_names_stay_in_the_backup_dir_and_within_a_file_name(standin, tmp_path):
    """Model names are text from the user or Ollama: '/' and '..' never leave the directory, and a name of
    300 characters still gives a file name the filesystem takes."""
    names = ['../../etc/passwd:latest', 'x' * 300 + ':latest']
    for name in names:
        standin.models[name] = gemma4('11.9B')
    plans = renderer_fix.plan(FakeClient(standin), names, 'gemma4-large')
    renderer_fix.write_backups(plans, str(tmp_path / 'bk'))
    for plan in plans:
        assert os.path.dirname(plan.backup) == str(tmp_path / 'bk') and os.path.isfile(plan.backup), plan.backup
    assert sorted(os.listdir(str(tmp_path))) == ['bk']
