"""The power-cut test: every crash state of every fix module's writes, on ext4 and (for the Pi's
/boot/firmware) vfat, checked the way ALICE checks applications (helpers/powercut.py says how the
states are built and docs/crash-safety.md gives the two persistence models with the kernel source).

The operations are recorded from the fix's real code (filewrite.TRACE) writing real files in tmp_path;
pi_ir_tx_fix runs as the module itself (in process). The states are built from the recording, not
from a real power cut: this kernel has no vfat, and fusefat's write order is not the kernel's.
Each test says how many states it checked; test_the_old_write_orders_fail shows that the checker
finds the crash states of the write orders this replaced.
"""
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import pi_ir_tx
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer_fix
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters, fold

from ..helpers import powercut
from ..helpers.modules import run_module
from ..plugins.module_utils.rpi.test_tryboot import device_tree
from ..helpers.vllm import config, write_adapter

PWM = b'[all]\ndtoverlay=pwm-ir-tx,gpio_pin=17,func=2\ninclude extra.txt\n'
PWM_EXTRA = b'# more\ndtoverlay=pwm-ir-tx,gpio_pin=22\n'
# Enough for every state of every module here: each crash point has at most a few hundred states.
LIMIT = None


@pytest.fixture
def recorder(monkeypatch):
    trace = []
    monkeypatch.setattr(filewrite, 'TRACE', trace)
    return trace


def snapshot(root):
    files, dirs = {}, set([str(root)])
    for directory, subdirs, names in os.walk(str(root)):
        dirs.update(os.path.join(directory, d) for d in subdirs)
        for name in names:
            with open(os.path.join(directory, name), 'rb') as handle:
                files[os.path.join(directory, name)] = handle.read()
    return files, dirs


def verdict(model, before, trace, targets):
    files, dirs = before
    result = powercut.check_trace(model, files, dirs, trace, targets, LIMIT)
    assert result['failures'] == [], result['failures'][:3]
    return result


class Module(object):
    @staticmethod
    def selinux_enabled():
        return False

    @staticmethod
    def fail_json(**kwargs):
        raise AssertionError(kwargs['msg'])


@pytest.mark.parametrize('model', ['vfat', 'ext4'])
def test_pi_ir_tx_fix_config_txt_and_its_include(tmp_path, recorder, monkeypatch, model):
    """config.txt and an included file, both changed, on the boot partition: vfat on a Pi, ext4 for an
    image kept on a Linux disk."""
    boot = tmp_path / 'boot' / 'firmware'
    boot.mkdir(parents=True)
    (boot / 'config.txt').write_bytes(PWM)
    (boot / 'extra.txt').write_bytes(PWM_EXTRA)
    if model == 'vfat':
        monkeypatch.setattr(filewrite, 'filesystem_type', lambda path: 'vfat' if str(boot) in os.path.abspath(path) else 'ext4')
    before = snapshot(boot)
    result = run_module('pi_ir_tx_fix', {'root': str(tmp_path)})
    assert result['changed'] and len(result['backups']) == 2, result
    targets = [powercut.Target(str(boot / name), old, (boot / name).read_bytes())
               for name, old in (('config.txt', PWM), ('extra.txt', PWM_EXTRA))]
    assert all(t.new != t.old for t in targets)
    staged_in = set(os.path.dirname(s[1]) for s in recorder if s[0] == 'create' and s[1].endswith('.postmortem.tmp'))
    assert staged_in == set([str(boot / filewrite.STAGING_DIR) if model == 'vfat' else str(boot)])
    counts = verdict(model, before, recorder, targets)
    print('pi_ir_tx_fix on %s: %d crash states checked, %d of them repaired by fsck.fat' % (
        model, counts['checked'], counts['repaired_by_fsck']))
    if model == 'vfat':
        # The one state FAT's rename cannot avoid: the entry rewritten, the staging entry not yet removed.
        assert counts['repaired_by_fsck'] > 0
    assert sorted(os.listdir(str(boot))) == sorted(['config.txt', 'extra.txt'] + [os.path.basename(b) for b in result['backups']])


@pytest.mark.parametrize('model', ['vfat', 'ext4'])
def test_pi_ir_tx_trial_boot_write_and_promote(tmp_path, recorder, monkeypatch, model):
    """The trial boot's writes: tryboot.txt and a trial copy of the include created, then (on the trial
    boot) config.txt and the include replaced and the trial files removed. config.txt is old or new in
    every state of both steps; the trial files are absent or complete."""
    boot = tmp_path / 'boot'
    boot.mkdir()
    (boot / 'config.txt').write_bytes(PWM)
    (boot / 'extra.txt').write_bytes(PWM_EXTRA)
    monkeypatch.setattr(pi_ir_tx, 'CONFIG_CANDIDATES', (str(boot / 'config.txt'),))
    if model == 'vfat':
        monkeypatch.setattr(filewrite, 'filesystem_type', lambda path: 'vfat' if str(boot) in os.path.abspath(path) else 'ext4')
    device_tree(tmp_path)
    before = snapshot(boot)
    hooks = {'device_tree': str(tmp_path / 'dt'), 'sysfs': str(tmp_path / 'sys')}
    trial = run_module('pi_ir_tx_fix', dict(hooks, trial='always'))
    assert trial['trial'] and trial['changed'], trial
    trial_files = dict((p, open(p, 'rb').read()) for p in trial['trial_files'])
    (tmp_path / 'dt' / 'chosen' / 'bootloader' / 'tryboot').write_bytes(b'\x00\x00\x00\x01')
    rc = tmp_path / 'sys' / 'class' / 'rc' / 'rc0'
    rc.mkdir(parents=True)
    (rc / 'uevent').write_text('DRV_NAME=gpio-ir-tx\n')
    promoted = run_module('pi_ir_tx_fix', dict(hooks, step='promote'))
    assert promoted['changed'], promoted
    targets = [powercut.Target(str(boot / name), old, (boot / name).read_bytes())
               for name, old in (('config.txt', PWM), ('extra.txt', PWM_EXTRA))]
    # Created by the first step, removed by the second: at any moment absent or complete, or on FAT
    # empty (a name is added before its clusters; harmless: the firmware reads a trial file only with
    # the tryboot flag, set after the file is durable).
    targets += [powercut.Target(path, None, data, backup=False, may_be_empty=model == 'vfat')
                for path, data in trial_files.items()]
    counts = verdict(model, before, recorder, targets)
    for path, data in trial_files.items():
        assert not os.path.exists(path)
    print('pi_ir_tx trial boot (tryboot.txt written, then promoted) on %s: %d crash states checked, %d repaired by fsck.fat'
          % (model, counts['checked'], counts['repaired_by_fsck']))


def test_unit_and_new_drop_in(tmp_path, recorder):
    """The shape of llama_server_fix and podman_quadlet's writes (a unit file replaced, a drop-in created
    in a directory that did not exist) through filewrite.write_all, which both modules call."""
    unit = tmp_path / 'etc' / 'systemd' / 'system' / 'llama.service'
    unit.parent.mkdir(parents=True)
    unit.write_bytes(b'[Service]\nExecStart=/usr/bin/llama-server\n')
    before = snapshot(tmp_path)
    drop_in = unit.parent / 'llama.service.d' / 'postmortem.conf'
    filewrite.write_all(Module(), [(str(unit), unit.read_text(), '[Service]\nExecStart=/usr/bin/llama-server --no-cache-prompt\n'),
                                   (str(drop_in), None, '[Service]\nEnvironment=LLAMA_ARG_CACHE_PROMPT=0\n')], True)
    targets = [powercut.Target(str(unit), before[0][str(unit)], unit.read_bytes()),
               powercut.Target(str(drop_in), None, drop_in.read_bytes())]
    counts = verdict('ext4', before, recorder, targets)
    print('write_all (unit + new drop-in) on ext4: %d crash states checked' % counts['checked'])


def test_podman_safe_export_install(tmp_path, recorder):
    """podman_safe_export's last step: the archive podman wrote beside dest, moved over the old one."""
    dest = tmp_path / 'web.tar'
    dest.write_bytes(b'old archive')
    before = snapshot(tmp_path)
    tmp = tmp_path / '.web.tar.postmortem-abc.tmp'
    tmp.write_bytes(b'new archive')
    backup = filewrite.install_file(str(tmp), str(dest), True)
    assert open(backup, 'rb').read() == b'old archive'
    counts = verdict('ext4', before, recorder, [powercut.Target(str(dest), b'old archive', b'new archive')])
    print('podman_safe_export on ext4: %d crash states checked' % counts['checked'])


class Plan(object):
    def __init__(self, name):
        self.name, self.changed, self.backup = name, True, None
        self.show = {'modelfile': 'FROM x\nSYSTEM secret\n', 'template': '{{ .Prompt }}'}


def test_ollama_renderer_fix_backups_are_durable_before_a_model_changes(tmp_path, recorder):
    """The Ollama fix changes models through the API, not files: its backups must be complete and durable
    before the first re-create (the marker in the trace), in every crash state after it."""
    plans = [Plan('a:latest'), Plan('b:latest')]
    backup_dir = tmp_path / 'bk'
    before = snapshot(tmp_path)
    renderer_fix.write_backups(plans, str(backup_dir))
    recorder.append(('external', 'POST /api/create a:latest'))
    written = sorted(str(p) for p in backup_dir.iterdir())
    assert len(written) == 4
    marker = len(recorder)
    checked = 0
    for point, _description, view in powercut.crash_states('ext4', before[0], before[1], recorder):
        checked += 1
        for path in written:
            content = view.get(path, (None,))[0]
            expected = open(path, 'rb').read()
            if point >= marker:
                assert content == expected, (point, path, content)
    print('ollama_gemma4_renderer_fix backups on ext4: %d crash states checked' % checked)


def test_vllm_fold_replaces_the_adapter_directory(tmp_path, recorder):
    src = str(tmp_path / 'src')
    write_adapter(src, config(rank_pattern={'q_proj': 4}, alpha_pattern={'q_proj': 4}),
                  ranks={'model.layers.0.self_attn.q_proj': 4, 'model.layers.1.self_attn.q_proj': 4})
    dest = tmp_path / 'dest'
    dest.mkdir()
    (dest / 'adapter_config.json').write_bytes(b'{"old": true}')
    (dest / 'README.md').write_bytes(b'old readme')
    before = snapshot(tmp_path)
    old = dict((p, (dest / p).read_bytes()) for p in os.listdir(str(dest)))
    del recorder[:]
    backup = fold.write(fold.plan(adapters.load(src)), str(dest))
    new = dict((p, (dest / p).read_bytes()) for p in os.listdir(str(dest)))
    assert os.path.isdir(backup) and new != old
    counts = verdict('ext4', before, recorder, [powercut.Target(str(dest), old, new)])
    print('vllm_lora_fold on ext4: %d crash states checked' % counts['checked'])


# --- the checker can fail ------------------------------------------------------------------------------

def test_the_old_write_orders_fail(tmp_path):
    """The orders this replaced, as they were: write_all without directory fsyncs and without holding
    the old file (on vfat the old clusters can be freed before the entry points elsewhere, and the
    backup's name may not be there), and the fold's rename aside (dest missing in between, on ext4)."""
    boot = str(tmp_path)
    config_txt, tmp, bak = boot + '/config.txt', boot + '/.config.txt.postmortem.tmp', boot + '/config.txt.1.bak'
    old_write_all = [('create', tmp), ('write', tmp, b'new'), ('fsync', tmp),
                     ('create', bak), ('write', bak, b'old'), ('fsync', bak),
                     ('rename', tmp, config_txt)]
    result = powercut.check_trace('vfat', {config_txt: b'old'}, set([boot]), old_write_all,
                                  [powercut.Target(config_txt, b'old', b'new')])
    found = set(p for failure in result['failures'] for p in failure[3])
    assert '%s is %s' % (config_txt, powercut.UNALLOCATED) in found
    assert '%s changed but no complete backup of it is there' % config_txt in found
    dest, work, aside = boot + '/dest', boot + '/.dest.fold-x', boot + '/dest.1.bak'
    old_fold = [('mkdir', work), ('create', work + '/a'), ('write', work + '/a', b'new'), ('fsync', work + '/a'),
                ('rename', dest, aside), ('rename', work, dest)]
    result = powercut.check_trace('ext4', {dest + '/a': b'old'}, set([boot, dest]), old_fold,
                                  [powercut.Target(dest, {'a': b'old'}, {'a': b'new'})])
    assert any('%s is missing' % dest in failure[3] for failure in result['failures'])
