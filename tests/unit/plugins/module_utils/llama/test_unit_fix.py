"""Unit files and Quadlet files for the llama_server role: in place, drop-in, Quadlet,
odd quoting, continuations, several ExecStart lines, environment expansions."""
import shlex

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio, systemd_unit
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import args as llama_args
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import unit_fix as llama_unit_fix
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError

CACHE_RAM_OFF = [(llama_args.CACHE_RAM, 0)]
ALL = llama_unit_fix.UnitEdits(argv=CACHE_RAM_OFF, restart=True)


def reader(files):
    def read(path):
        if path not in files:
            raise hostio.ReadProblem(path, 'does not exist', 'missing')
        return files[path]
    return read


def apply(files, changes):
    for path, _before, after in changes:
        files[path] = after


def exec_argv(text):
    """The ExecStart= command lines in effect after resets (an empty value clears the list)."""
    effective = []
    for entry in systemd_unit.UnitFile(text).entries:
        if entry.section == 'Service' and entry.key == 'ExecStart':
            effective = [] if entry.value == '' else effective + [entry]
    return [systemd_unit.split_command(e.value)[1] for e in effective]


def test_own_unit_in_place_with_continuations_quoting_and_comments():
    path = '/etc/systemd/system/llama.service'
    files = {path: ('[Unit]\nDescription=LLM\n\n[Service]\n# the model\nExecStart=/opt/llama/llama-server \\\n'
                    '    -m "/srv/models/my model.gguf" --alias \'chat bot\' \\\n    --lora /srv/lora/a.gguf --port 8080\n'
                    'Restart=no\nEnvironmentFile=-/etc/default/llama\n\n[Install]\nWantedBy=multi-user.target\n')}
    changes, mode, _append = llama_unit_fix.plan('llama.service', path, '', [], ALL, read=reader(files))
    assert mode == 'in_place' and len(changes) == 1
    apply(files, changes)
    text = files[path]
    assert exec_argv(text) == [['/opt/llama/llama-server', '-m', '/srv/models/my model.gguf', '--alias', 'chat bot',
                                '--lora', '/srv/lora/a.gguf', '--port', '8080', '--cache-ram', '0']]
    assert 'Restart=on-failure\n' in text and 'Restart=no' not in text
    assert '# the model\n' in text and text.endswith('[Install]\nWantedBy=multi-user.target\n')
    assert llama_unit_fix.plan('llama.service', path, '', [], ALL, read=reader(files))[0] == []


def test_existing_cache_ram_value_is_replaced_and_env_expansion_kept():
    path = '/etc/systemd/system/llama.service'
    files = {path: '[Service]\nExecStart=-/usr/bin/llama-server -m m -cram 4096 --sleep-idle-seconds 60\n'}
    fixes = llama_unit_fix.UnitEdits(argv=CACHE_RAM_OFF + [(llama_args.SLEEP_IDLE_SECONDS, -1)])
    changes, _mode, _append = llama_unit_fix.plan('llama.service', path, '', [], fixes, read=reader(files))
    apply(files, changes)
    assert files[path] == '[Service]\nExecStart=-/usr/bin/llama-server -m m -cram 0 --sleep-idle-seconds -1\n'


def test_a_variable_or_a_value_that_looks_like_a_flag_is_not_edited_as_one():
    """$LLAMA_OPTS expands to words nobody knows here (one may take the next token as its value), and
    -a takes --cache-ram as its value (arg.cpp l.842-862): the settings are appended, the last one wins."""
    path = '/etc/systemd/system/llama.service'
    files = {path: '[Service]\nExecStart=/usr/bin/llama-server $LLAMA_OPTS -cram 4096\n'}
    changes, _mode, append_only = llama_unit_fix.plan('llama.service', path, '', [], llama_unit_fix.UnitEdits(
        argv=CACHE_RAM_OFF), read=reader(files), process_argv=['/usr/bin/llama-server', '-c', '512', '-cram', '4096'])
    assert append_only
    assert changes[0][2] == '[Service]\nExecStart=/usr/bin/llama-server $LLAMA_OPTS -cram 4096 --cache-ram 0\n'
    files = {path: '[Service]\nExecStart=/usr/bin/llama-server -a --cache-ram -m m\n'}
    changes, _mode, _append = llama_unit_fix.plan('llama.service', path, '', [], llama_unit_fix.UnitEdits(
        argv=CACHE_RAM_OFF), read=reader(files))
    assert changes[0][2] == '[Service]\nExecStart=/usr/bin/llama-server -a --cache-ram -m m --cache-ram 0\n'


def test_an_environment_line_is_changed_where_it_sets_the_variable():
    path = '/etc/systemd/system/llama.service'
    files = {path: '[Service]\nEnvironment="LLAMA_ARG_CACHE_RAM=4096" HOME=/srv\nExecStart=/usr/bin/llama-server -m m\n'}
    edits = llama_unit_fix.UnitEdits(env={'LLAMA_ARG_CACHE_RAM': '0'})
    changes, mode, _append = llama_unit_fix.plan('llama.service', path, '', [], edits, read=reader(files))
    assert mode == 'in_place'
    assert changes[0][2] == '[Service]\nEnvironment=LLAMA_ARG_CACHE_RAM=0 HOME=/srv\nExecStart=/usr/bin/llama-server -m m\n'
    files[path] = '[Service]\nEnvironmentFile=/etc/default/llama\nExecStart=/usr/bin/llama-server -m m\n'
    files['/etc/default/llama'] = 'LLAMA_ARG_CACHE_RAM=4096\n'
    with pytest.raises(DetectionError, match='EnvironmentFile=/etc/default/llama'):
        llama_unit_fix.plan('llama.service', path, '', [], edits, read=reader(files))
    files[path] = '[Service]\nExecStart=/usr/bin/llama-server -m m\n'
    with pytest.raises(DetectionError, match='not set by an Environment= line'):
        llama_unit_fix.plan('llama.service', path, '', [], edits, read=reader(files))


def test_vendor_unit_gets_a_drop_in_with_the_reset_line():
    vendor = '/usr/lib/systemd/system/llama-server.service'
    files = {vendor: '[Service]\nExecStart=/usr/bin/llama-server -m /m.gguf --lora /a.gguf\n'}
    changes, mode, _append = llama_unit_fix.plan('llama-server.service', vendor, '', [], ALL, read=reader(files))
    assert mode == 'drop_in'
    (path, before, after), = changes
    assert path == '/etc/systemd/system/llama-server.service.d/50-homelab-postmortem.conf' and before is None
    assert after.splitlines()[1:] == ['[Service]', 'ExecStart=', 'ExecStart=/usr/bin/llama-server -m /m.gguf --lora /a.gguf --cache-ram 0',
                                      'Restart=on-failure']
    apply(files, changes)
    again, _mode, _append = llama_unit_fix.plan('llama-server.service', vendor, '', [path], ALL, read=reader(files))
    assert again == []


def test_an_admin_drop_in_that_overrides_exec_start_is_the_base():
    vendor = '/usr/lib/systemd/system/llama.service'
    admin = '/etc/systemd/system/llama.service.d/10-local.conf'
    files = {vendor: '[Service]\nExecStart=/usr/bin/llama-server -m /old.gguf\nRestart=always\n',
             admin: '[Service]\nExecStart=\nExecStart=/usr/bin/llama-server -m /new.gguf --lora /a.gguf\n'}
    changes, _mode, _append = llama_unit_fix.plan('llama.service', vendor, '', [admin], ALL, read=reader(files))
    after = changes[0][2]
    assert 'ExecStart=/usr/bin/llama-server -m /new.gguf --lora /a.gguf --cache-ram 0' in after
    assert 'Restart=' not in after  # always already restarts after a crash


def test_several_exec_start_lines_and_resets():
    path = '/etc/systemd/system/llama.service'
    files = {path: '[Service]\nExecStart=/bin/true\nExecStart=\nExecStartPre=/bin/mkdir -p /run/llama\n'
                   'ExecStart=/usr/bin/llama-server --lora /a.gguf\n'}
    changes, _mode, _append = llama_unit_fix.plan('llama.service', path, '', [],
                                                  llama_unit_fix.UnitEdits(argv=CACHE_RAM_OFF), read=reader(files))
    apply(files, changes)
    assert 'ExecStart=/bin/true\n' in files[path]  # before the reset: not in effect, left alone
    assert exec_argv(files[path]) == [['/usr/bin/llama-server', '--lora', '/a.gguf', '--cache-ram', '0']]


def test_quadlet_container_file():
    path = '/etc/containers/systemd/llama.container'
    files = {path: '[Container]\r\nImage=localhost/llama:latest\r\nExec=-m /models/m.gguf --lora /models/a.gguf\r\n'}
    changes, mode, _append = llama_unit_fix.plan('llama.service', '/run/systemd/generator/llama.service', path, [],
                                                 ALL, read=reader(files))
    assert mode == 'quadlet'
    apply(files, changes)
    assert files[path] == ('[Container]\r\nImage=localhost/llama:latest\r\nExec=-m /models/m.gguf --lora /models/a.gguf '
                           '--cache-ram 0\r\n\r\n[Service]\r\nRestart=on-failure\r\n')
    assert llama_unit_fix.plan('llama.service', '/run/x', path, [], ALL, read=reader(files))[0] == []


@pytest.mark.parametrize('exec_start,reason', [
    ('/usr/bin/podman run --rm llama', 'does not start llama-server directly'),
    ('/usr/bin/llama-server "unterminated', 'cannot parse the command line'),
])
def test_units_we_cannot_change_safely(exec_start, reason):
    path = '/etc/systemd/system/x.service'
    with pytest.raises(DetectionError, match=reason):
        llama_unit_fix.plan('x.service', path, '', [], ALL, read=reader({path: '[Service]\nExecStart=%s\n' % exec_start}))


def test_quote_round_trips():
    for arg in ('plain', 'with space', "it's", 'a"b', '$VAR', '%i', ''):
        assert shlex.split(systemd_unit.quote(arg)) == [arg]


def test_exec_lines_split_as_systemd_splits_them():
    from ansible_collections.homelab.postmortem.plugins.module_utils import systemd_unit
    assert systemd_unit.split_command("-/opt/llama-server --alias 'own model' -m \"/m/a b.gguf\"") == \
        ('-', ['/opt/llama-server', '--alias', 'own model', '-m', '/m/a b.gguf'])
    assert systemd_unit.split_words('printf "a\\tb\\n" \\x41 "\\u00fc" x\\ y') == ['printf', 'a\tb\n', 'A', u'\u00fc', 'x y']
    for broken in ('a "b', "a 'b", 'a \\', 'a \\xZZ'):
        with pytest.raises(ValueError):
            systemd_unit.split_words(broken)
