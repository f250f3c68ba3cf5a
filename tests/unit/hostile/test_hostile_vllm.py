"""The vLLM detections against hostile adapter trees, safetensors files, pattern keys and images.

Files here are real files, named pipes and links on this machine; safetensors files are written
byte by byte where the safetensors package would refuse to write them. What must hold, per class:

- a named pipe (or any file that is not a regular file) where a config, a header or a shard should
  be is refused at once, never waited on;
- a safetensors file is accepted exactly when the safetensors library itself loads it (checked by
  running it: safetensors.numpy.load_file, the Rust validation of safetensors/src/tensor.rs);
- JSON nested or sized without bound (headers, adapter configs, the engine's command line, a
  checkpoint's config.json) is an error with the reason, never a RecursionError;
- a pattern key whose matching backtracks without end (``(a+)+$`` against a long run of ``a``) ends
  within the matching bound (lora_scale.MATCH_SECONDS) and is named; the same key against ordinary
  module names is judged as PEFT's own re.match judges it;
- numbers JSON can hold that no config means (r = 1e400, a number of 500 digits, lora_alpha 0)
  are errors or judged as upstream does, never an OverflowError or ZeroDivisionError;
- in an image, every path an adapter tree holds (links to absolute paths, linked directories)
  resolves inside the image; a way out is a problem, never a read of this machine's files;
- the input tree is unchanged, findings are strict JSON, and every case ends within its bound.
"""
import json
import os
import struct
import time

import pytest
from safetensors import safe_open

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.vllm_lora_patterns import DETECTION as vllm_lora_patterns
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import json_safe
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters, checkpoint, lora_scale, safetensors

from ..helpers.hostile import snapshot
from ..helpers.vllm import MODULES, Host, config, engine_of, write_adapter, write_checkpoint

BOUND_S = 10
MATCH_SLACK_S = 2.0


def audit(ctx):
    """vllm_lora_patterns through the registry, timed, strict JSON, never a bug finding."""
    started = time.monotonic()
    finding = registry.run_one(ctx, vllm_lora_patterns)
    elapsed = time.monotonic() - started
    json.dumps(json_safe(finding), allow_nan=False)
    for text in [finding['summary']] + [i['summary'] for i in finding['evidence'].get('instances', [])]:
        assert 'bug in homelab.postmortem' not in text, text
    return finding, elapsed


def live(tmp_path, detection_timeout=300, **settings):
    os.makedirs(str(tmp_path / 'proc'), exist_ok=True)
    return AuditContext(root='/', live=True, proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'),
                        kernel_release='6.18.0', which=lambda name: None, detection_timeout=detection_timeout,
                        settings=registry.validate_settings({'vllm_lora_patterns': settings}))


def image(root, **settings):
    return AuditContext(root=str(root), settings=registry.validate_settings({'vllm_lora_patterns': settings}))


def instances(finding):
    return dict((i['name'], i) for i in finding['evidence'].get('instances', []))


def raw_safetensors(path, header, data=b'', length=None):
    """A safetensors file as given: 8-byte length, header (a dict is JSON-encoded), data."""
    body = header if isinstance(header, bytes) else json.dumps(header).encode()
    with open(path, 'wb') as handle:
        handle.write(struct.pack('<Q', len(body) if length is None else length) + body + data)
    return path


def upstream_reads(path):
    """The tensor names, as the safetensors library reads the file (safe_open runs read_metadata and
    Metadata::validate; no tensor is converted, so dtypes numpy lacks are fine)."""
    with safe_open(path, framework='np') as handle:
        return list(handle.keys())


def f32(name, count, begin):
    return {name: {'dtype': 'F32', 'shape': [count], 'data_offsets': [begin, begin + 4 * count]}}


# --- files that are not files ---------------------------------------------------------------------

@pytest.mark.parametrize('name', ['adapter_config.json', 'adapter_model.safetensors'])
def test_a_named_pipe_in_an_adapter_is_refused_not_waited_on(tmp_path, name):
    adapter = tmp_path / 'adapters' / 'a'
    write_adapter(str(adapter), config())
    os.unlink(str(adapter / name))
    os.mkfifo(str(adapter / name))
    before = snapshot(tmp_path / 'adapters')
    finding, elapsed = audit(live(tmp_path, adapter_paths=[str(tmp_path / 'adapters')]))
    assert elapsed <= BOUND_S
    found = instances(finding)['adapter %s' % adapter]
    assert found['status'] == 'error', found
    assert 'named pipe' in found['summary'] and name in found['summary'], found['summary']
    assert snapshot(tmp_path / 'adapters') == before


def test_a_named_pipe_shard_of_a_served_checkpoint_is_refused(tmp_path):
    model = write_checkpoint(str(tmp_path / 'model'), 1)
    os.mkfifo(os.path.join(model, 'extra.safetensors'))
    started = time.monotonic()
    with pytest.raises(safetensors.SafetensorsProblem, match='extra.safetensors is a named pipe, not a regular file'):
        checkpoint.header_fingerprint(model)
    assert time.monotonic() - started <= BOUND_S


def test_a_named_pipe_shard_costs_the_weight_cache_engine_only(tmp_path):
    """vllm_weight_cache reads the engine's and the daemon's checkpoints (live only): the one whose shard is
    a pipe gives that engine a reason, the detection still answers."""
    host = Host(tmp_path)
    base = write_checkpoint(str(tmp_path / 'base'), 1)
    os.mkfifo(os.path.join(base, 'stuck.safetensors'))
    host.start('preload', '--model', base)
    engine = host.start('serve', base, '--load-format', 'ipc_cache')
    started = time.monotonic()
    finding = host.audit()
    assert time.monotonic() - started <= BOUND_S
    result = instances(finding)['engine pid %d' % engine]
    assert result['status'] == 'error' and 'stuck.safetensors is a named pipe' in result['summary'], result


# --- safetensors: exactly what the library accepts ------------------------------------------------

HEADERS = [
    # (case, header, data bytes, what safetensors/src/tensor.rs says)
    ('overlapping tensors', dict(f32('a', 2, 0), **f32('b', 2, 0)), 8, 'they overlap'),
    ('one inside another', dict(f32('a', 4, 0), b={'dtype': 'F32', 'shape': [1], 'data_offsets': [4, 8]}), 16,
     'they overlap'),
    ('a gap', dict(f32('a', 1, 0), **f32('b', 1, 8)), 12, 'a gap'),
    ('bytes after the last tensor', f32('a', 1, 0), 8, 'cover 4 of the 8 data bytes'),
    ('an unknown dtype', {'a': {'dtype': 'Q4_K', 'shape': [1], 'data_offsets': [0, 4]}}, 4, 'safetensors does not know'),
    ('metadata that is no string', dict({'__metadata__': {'format': 1}}, **f32('a', 1, 0)), 4, 'map of strings'),
    ('a shape of lists', {'a': {'dtype': 'F32', 'shape': [[1]], 'data_offsets': [0, 4]}}, 4, 'not a list of whole'),
    ('a shape beyond 64 bits', {'a': {'dtype': 'F32', 'shape': [2 ** 40, 2 ** 40], 'data_offsets': [0, 4]}}, 4,
     'too large for safetensors to size'),
    ('F4 ending inside a byte', {'a': {'dtype': 'F4', 'shape': [3], 'data_offsets': [0, 2]}}, 2,
     'does not end on a byte boundary'),
    ('a negative offset', {'a': {'dtype': 'F32', 'shape': [1], 'data_offsets': [-4, 0]}}, 4, 'points outside'),
    ('offsets as floats', {'a': {'dtype': 'F32', 'shape': [1], 'data_offsets': [0.0, 4.0]}}, 4, 'points outside'),
    ('size and shape disagree', {'a': {'dtype': 'F32', 'shape': [2], 'data_offsets': [0, 4]}}, 4, 'its data is 4 bytes'),
    ('a list, not an object', [1, 2], 0, 'not a JSON object'),
    ('a tensor that is a string', {'a': 'F32'}, 0, 'is not an object'),
]
ACCEPTED = [
    ('null metadata', dict({'__metadata__': None}, **f32('a', 1, 0)), 4),
    ('a field safetensors ignores', {'a': {'dtype': 'F32', 'shape': [1], 'data_offsets': [0, 4], 'note': 1}}, 4),
    ('no tensors', {}, 0),
    ('an empty tensor before another', dict({'a': {'dtype': 'F32', 'shape': [0], 'data_offsets': [0, 0]}},
                                            **f32('b', 1, 0)), 4),
    ('tensors listed out of order', dict(f32('b', 1, 4), **f32('a', 1, 0)), 8),
    ('F4 on a byte boundary', {'a': {'dtype': 'F4', 'shape': [4], 'data_offsets': [0, 2]}}, 2),
]


@pytest.mark.parametrize('case,header,size,fragment', HEADERS, ids=[c[0] for c in HEADERS])
def test_a_file_safetensors_refuses_is_refused_and_named(tmp_path, case, header, size, fragment):
    path = raw_safetensors(str(tmp_path / 'x.safetensors'), header, b'\0' * size)
    with pytest.raises(Exception) as upstream:
        upstream_reads(path)
    assert type(upstream.value).__name__ == 'SafetensorError', upstream.value
    with pytest.raises(safetensors.SafetensorsProblem) as ours:
        safetensors.read_header(path)
    assert fragment in str(ours.value) and path in str(ours.value), (case, str(ours.value), str(upstream.value))


@pytest.mark.parametrize('case,header,size', ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_a_file_safetensors_loads_is_read(tmp_path, case, header, size):
    path = raw_safetensors(str(tmp_path / 'x.safetensors'), header, b'\0' * size)
    upstream_reads(path)   # the library reads it: so must we
    names = set(k for k in header if k != '__metadata__')
    assert set(safetensors.read_header(path).tensors) == names


@pytest.mark.parametrize('case,header,length,fragment', [
    ('100,000 levels deep', b'[' * 100000 + b']' * 100000, None, 'nested deeper than 8 levels'),
    ('deep inside the metadata', b'{"__metadata__": {"a": ' + b'[' * 20 + b']' * 20 + b'}}', None,
     'nested deeper than 8 levels'),
    ('a number of 5,000 digits', b'{"a": {"dtype": "F32", "shape": [' + b'9' * 5000 + b'], "data_offsets": [0, 4]}}',
     None, 'a number of 5000 digits'),
    ('not UTF-8', b'{"\xff": 1}', None, 'not UTF-8'),
    ('a length beyond the file', b'{}', 10 ** 6, 'larger than the file'),
    ('a length beyond 100 MB', b'{}', 2 ** 63, 'larger than'),
])
def test_a_header_that_is_no_header_is_refused_within_its_bounds(tmp_path, case, header, length, fragment):
    path = raw_safetensors(str(tmp_path / 'x.safetensors'), header, length=length)
    started = time.monotonic()
    with pytest.raises(safetensors.SafetensorsProblem) as ours:
        safetensors.read_header(path)
    assert time.monotonic() - started <= BOUND_S
    assert fragment in str(ours.value), str(ours.value)


# --- adapter configs -------------------------------------------------------------------------------

@pytest.mark.parametrize('text,fragment', [
    ('[' * 100000 + ']' * 100000, 'nested deeper than 16 levels'),
    ('{"r": 8, "lora_alpha": 16, "eva_config": ' + '{"a": ' * 30 + '1' + '}' * 30 + '}', 'nested deeper than 16 levels'),
    ('{"r": 1e400, "lora_alpha": 16}', 'r is inf, not a positive whole number'),
    ('{"r": ' + '9' * 500 + ', "lora_alpha": 16}', 'a number of 500 digits'),
    ('{"r": 8, "lora_alpha": 1e400}', 'lora_alpha is inf, not a number'),
    ('{"r": 8, "lora_alpha": -1e400}', 'lora_alpha is -inf, not a number'),
    ('{"r": 8, "lora_alpha": NaN}', 'lora_alpha is nan, not a number'),
    ('{"r": 8, "lora_alpha": 16, "rank_pattern": {"q_proj": 1e400}}', 'rank_pattern is not a map'),
    ('{"r": 8, "lora_alpha": 16, "alpha_pattern": {"q_proj": 1e400}}', 'alpha_pattern is not a map'),
    ('{"r": true, "lora_alpha": 16}', 'r is True, not a positive whole number'),
])
def test_configs_with_numbers_no_peft_config_means_are_named(tmp_path, text, fragment):
    adapter = tmp_path / 'adapters' / 'a'
    write_adapter(str(adapter), config())
    (adapter / 'adapter_config.json').write_text(text)
    finding, elapsed = audit(live(tmp_path, adapter_paths=[str(tmp_path / 'adapters')]))
    assert elapsed <= BOUND_S
    found = instances(finding)['adapter %s' % adapter]
    assert found['status'] == 'error' and fragment in found['summary'], found['summary']


def test_lora_alpha_zero_is_judged_not_divided_by(tmp_path):
    """PEFT trains every module at scale 0 / r = 0 and vLLM serves 0: served as trained (no ZeroDivisionError,
    no false 'another scale')."""
    adapter = tmp_path / 'adapters' / 'a'
    write_adapter(str(adapter), config(lora_alpha=0, peft_version='0.21.2'))
    finding, _elapsed = audit(live(tmp_path, adapter_paths=[str(tmp_path / 'adapters')]))
    found = instances(finding)['adapter %s' % adapter]
    assert found['status'] == 'ok', found


def test_a_lora_modules_value_nested_without_bound_is_skipped(tmp_path):
    """--lora-modules takes name=path or JSON (vllm/entrypoints/openai/cli_args.py LoRAParserAction); a JSON
    value 100,000 levels deep is no adapter, and costs nothing else."""
    host = Host(tmp_path)
    adapter = tmp_path / 'adapters' / 'a'
    write_adapter(str(adapter), config())
    host.start('serve', str(tmp_path / 'base'), '--lora-modules', '[' * 100000 + ']' * 100000, 'a=%s' % adapter)
    ctx = AuditContext(root='/', live=True, proc_root=str(host.proc), sys_root=str(tmp_path / 'sys'),
                       kernel_release='6.18.0', which=lambda name: None,
                       settings=registry.validate_settings({'vllm_lora_patterns': {}}))
    finding, elapsed = audit(ctx)
    assert elapsed <= BOUND_S
    assert instances(finding)['adapter %s' % adapter]['status'] == 'ok'


# --- pattern keys ------------------------------------------------------------------------------------

CATASTROPHIC = '(a+)+$'


def peft_function(relative, name):
    """A function of the installed PEFT (0.21.2), compiled from its own source without importing PEFT: importing
    it loads torch, whose start-up breaks on ansible-core's sys.intern patch in this process."""
    import ast
    import importlib.util
    import re
    from typing import Sequence
    spec = importlib.util.find_spec('peft')
    # make test's .venv installs requirements/test-peft.txt; scripts/core-matrix.sh installs the peft
    # package alone (no torch) into the ansible-core 2.20/2.21 virtualenvs: only its source is read.
    assert spec is not None, 'PEFT 0.21.2 is the oracle here: pip install --no-deps peft==0.21.2 (requirements/test-peft.txt)'
    path = os.path.join(os.path.dirname(spec.origin), relative)
    with open(path) as handle:
        tree = ast.parse(handle.read())
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
    namespace = {'re': re, 'Sequence': Sequence}
    exec(compile(ast.Module(body=found, type_ignores=[]), path, 'exec'), namespace)  # pylint: disable=exec-used
    return namespace[name]


def test_a_catastrophic_key_against_a_long_run_of_a_ends_and_names_the_key(tmp_path):
    """PEFT's re.match((.*\\.)?((a+)+$)$, 'model.aaa...a!') backtracks 2^n times; so would ours, without a bound."""
    adapter = tmp_path / 'adapters' / 'a'
    write_adapter(str(adapter), config(rank_pattern={CATASTROPHIC: 4}),
                  modules=('model.layers.0.self_attn.q_proj', 'model.' + 'a' * 40 + '!'))
    before = snapshot(tmp_path / 'adapters')
    finding, elapsed = audit(live(tmp_path, adapter_paths=[str(tmp_path / 'adapters')]))
    assert elapsed <= lora_scale.MATCH_SECONDS + MATCH_SLACK_S, elapsed
    found = instances(finding)['adapter %s' % adapter]
    assert found['status'] == 'error', found
    assert "rank_pattern key '(a+)+$' did not finish matching module 'model.aaaa" in found['summary'], found['summary']
    assert 'backtracks without end' in found['summary']
    assert snapshot(tmp_path / 'adapters') == before


def test_the_same_key_against_ordinary_names_is_judged_as_peft_judges_it(tmp_path):
    """A key PEFT accepts is judged: PEFT 0.21.2's own get_pattern_key (peft/utils/other.py l.1524-1532)
    decides which modules it matches; here none of the ordinary names, and 'model.layers.0.aaaa' ends in a."""
    get_pattern_key = peft_function('utils/other.py', 'get_pattern_key')
    names = list(MODULES) + ['model.layers.0.aaaa']
    cfg = config(rank_pattern={CATASTROPHIC: 4}, peft_version='0.21.2')
    ranks = dict((name, 4 if get_pattern_key([CATASTROPHIC], name) == CATASTROPHIC else 8) for name in names)
    assert ranks['model.layers.0.aaaa'] == 4 and ranks[MODULES[0]] == 8
    adapter = tmp_path / 'adapters' / 'a'
    write_adapter(str(adapter), cfg, ranks=ranks, modules=names)
    loaded = adapters.load(str(adapter))
    for name in names:
        assert lora_scale.peft_scale(loaded.config, name, (0, 21, 2))[0] == ranks[name], name
    finding, _elapsed = audit(live(tmp_path, adapter_paths=[str(tmp_path / 'adapters')]))
    found = instances(finding)['adapter %s' % adapter]
    # vLLM before 0.32.0 (none found here) serves every module at 16 / 8: the one with rank 4 is off by 2.
    assert found['status'] == 'at_risk' and found['evidence']['judged'][0]['modules_off'] == 1, found


@pytest.mark.parametrize('key', ['(x+x+)+y', '(a|aa)+$', '(.*a){25}$', '(?:a*)*b'])
def test_other_backtracking_keys_end_within_the_bound(tmp_path, key):
    adapter = tmp_path / 'adapters' / 'a'
    write_adapter(str(adapter), config(alpha_pattern={key: 32}), modules=('model.' + 'x' * 28 + 'a' * 30,))
    finding, elapsed = audit(live(tmp_path, adapter_paths=[str(tmp_path / 'adapters')]))
    assert elapsed <= lora_scale.MATCH_SECONDS + MATCH_SLACK_S, (key, elapsed)
    found = instances(finding)['adapter %s' % adapter]
    assert found['status'] in ('error', 'ok', 'at_risk'), found
    if found['status'] == 'error':
        assert 'alpha_pattern key' in found['summary'] and 'did not finish' in found['summary'], found['summary']


def test_many_catastrophic_adapters_end_within_the_detection_budget(tmp_path):
    """Each adapter's matching is bounded (2 s); 10 of them share the detection's budget (3 s here) and the
    rest are named as not read."""
    for index in range(10):
        write_adapter(str(tmp_path / 'adapters' / ('a%d' % index)), config(rank_pattern={CATASTROPHIC: 4}),
                      modules=('model.' + 'a' * 40 + '!',))
    finding, elapsed = audit(live(tmp_path, detection_timeout=3, adapter_paths=[str(tmp_path / 'adapters')]))
    assert elapsed <= 3 + lora_scale.MATCH_SECONDS + MATCH_SLACK_S, elapsed
    rest = instances(finding)['adapters not read']
    assert rest['status'] == 'unknown' and 'detection_timeout' in rest['summary'], rest


@pytest.mark.parametrize('key,fragment', [
    ('a)(b', 'unbalanced parenthesis'),                        # compiles in PEFT 0.15's form only: refused
    ('(?i)q_proj', 'global flags not at the start'),           # an error in both forms on Python 3.11+
    ('q_proj\\', 'missing ), unterminated subpattern'),   # PEFT 0.15's form: (.*\.)?(q_proj\)$
    ('a{99999999999}', 'the repetition number is too large'),
    ('(' * 1000 + 'q' + ')' * 1000, 'nests its groups too deeply for Python to parse it'),
])
def test_a_key_peft_cannot_compile_is_named(key, fragment):
    parsed, why = lora_scale.parse_config(config(rank_pattern={key: 4}))
    assert parsed is None and ('rank_pattern key %r' % key)[:60] in why and fragment in why, why


def test_the_time_box_leaves_other_timers_alone():
    """An interval timer someone else set keeps running (minus the time the match took)."""
    import signal
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *args: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        parsed, _why = lora_scale.parse_config(config(rank_pattern={'q_proj': 4}))
        lora_scale.peft_scale(parsed, MODULES[0], (0, 21, 2))
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 0
        time.sleep(0.7)
        assert fired == [True]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- images: every path resolves inside the image --------------------------------------------------

def test_an_absolute_link_to_the_config_reads_the_images_file(tmp_path):
    """adapter_config.json -> /cfg/persona.json: in the image that is <root>/cfg/persona.json; this machine
    has no /cfg (it was read from here before, and missing)."""
    assert not os.path.exists('/cfg')
    root = tmp_path / 'card'
    adapter = root / 'srv' / 'adapters' / 'persona'
    write_adapter(str(adapter), config(alpha_pattern={'v_proj': 32}))
    (root / 'cfg').mkdir()
    os.rename(str(adapter / 'adapter_config.json'), str(root / 'cfg' / 'persona.json'))
    os.symlink('/cfg/persona.json', str(adapter / 'adapter_config.json'))
    os.rename(str(adapter / 'adapter_model.safetensors'), str(root / 'cfg' / 'persona.safetensors'))
    os.symlink('/cfg/persona.safetensors', str(adapter / 'adapter_model.safetensors'))
    finding, _elapsed = audit(image(root, adapter_paths=['/srv/adapters']))
    found = instances(finding)['adapter /srv/adapters/persona']
    assert found['status'] == 'at_risk', found   # alpha_pattern dropped by vLLM before 0.32.0
    assert found['evidence']['path'] == '/srv/adapters/persona'


def test_a_link_out_of_the_image_is_a_problem_not_a_read_of_this_machine(tmp_path):
    root = tmp_path / 'card'
    adapter = root / 'srv' / 'adapters' / 'a'
    write_adapter(str(adapter), config())
    os.unlink(str(adapter / 'adapter_config.json'))
    # Enough ".." to reach this machine's / from the adapter, then a file that exists here.
    os.symlink('../' * 12 + 'etc/hostname', str(adapter / 'adapter_config.json'))
    finding, _elapsed = audit(image(root, adapter_paths=['/srv/adapters']))
    found = instances(finding)['adapter /srv/adapters/a']
    assert found['status'] == 'error' and 'leaves the image root' in found['summary'], found


def test_a_directory_link_out_of_the_image_is_named_and_the_rest_is_judged(tmp_path):
    root = tmp_path / 'card'
    write_adapter(str(root / 'srv' / 'adapters' / 'a'), config())
    os.symlink('../' * 12 + 'usr', str(root / 'srv' / 'adapters' / 'out'))
    finding, _elapsed = audit(image(root, adapter_paths=['/srv/adapters']))
    found = instances(finding)
    assert found['adapter /srv/adapters/a']['status'] == 'ok'
    assert found['adapter path']['status'] == 'error'
    assert 'Cannot read /srv/adapters/out: leaves the image root' in found['adapter path']['summary'], found


def test_linked_adapter_directories_are_found_inside_the_image_and_loops_walked_once(tmp_path):
    root = tmp_path / 'card'
    write_adapter(str(root / 'models' / 'persona'), config())
    (root / 'srv' / 'adapters').mkdir(parents=True)
    os.symlink('/models/persona', str(root / 'srv' / 'adapters' / 'persona'))   # absolute: the image's /models
    os.symlink('/srv/adapters', str(root / 'srv' / 'adapters' / 'loop'))        # a loop back to the root
    os.symlink('/', str(root / 'srv' / 'adapters' / 'slash'))                   # the image's /, not this machine's
    started = time.monotonic()
    finding, _elapsed = audit(image(root, adapter_paths=['/srv/adapters']))
    assert time.monotonic() - started <= BOUND_S
    found = instances(finding)
    assert found['adapter /srv/adapters/persona']['status'] == 'ok'
    # /srv/adapters/slash/models/persona is the same directory: walked once, under the first name reached.
    assert [name for name in found if name.startswith('adapter /')] == ['adapter /srv/adapters/persona']


def test_a_directory_link_loop_on_a_live_host_ends(tmp_path):
    root = tmp_path / 'adapters'
    write_adapter(str(root / 'deep' / 'a'), config())
    os.symlink(str(root), str(root / 'deep' / 'again'))
    finding, elapsed = audit(live(tmp_path, adapter_paths=[str(root)]))
    assert elapsed <= BOUND_S
    assert [i['name'] for i in finding['evidence']['instances']] == ['adapter %s' % (root / 'deep' / 'a')]


# --- a checkpoint's config.json and the engine's JSON options -------------------------------------

@pytest.mark.parametrize('field,value', [
    ('architectures', 5), ('architectures', {'a': 1}), ('architectures', [1, None]), ('model_type', [1]),
    ('torch_dtype', 5), ('quantization_config', 'x'), ('text_config', 5), ('rope_theta', {'a': [1]}),
    ('num_experts', '8'), ('num_local_experts', [None]),
])
def test_config_json_fields_of_the_wrong_type_never_cost_the_detection(tmp_path, field, value):
    host = Host(tmp_path)
    base = write_checkpoint(str(tmp_path / 'base'), 1, {field: value})
    host.start('preload', '--model', base)
    engine = host.start('serve', base, '--load-format', 'ipc_cache')
    finding = host.audit()
    json.dumps(json_safe(finding), allow_nan=False)
    result = engine_of(finding, engine)
    assert 'bug in homelab.postmortem' not in finding['summary'] + result['summary'], result


@pytest.mark.parametrize('text,fragment', [
    ('[' * 100000 + ']' * 100000, 'nested deeper than 64 levels'),
    ('{"a": ' + '9' * 5000 + '}', 'a number of 5000 digits'),
])
def test_a_config_json_without_bounds_is_named(tmp_path, text, fragment):
    host = Host(tmp_path)
    base = write_checkpoint(str(tmp_path / 'base'), 1)
    with open(os.path.join(base, 'config.json'), 'w') as handle:
        handle.write(text)
    host.start('preload', '--model', base)
    engine = host.start('serve', base, '--load-format', 'ipc_cache')
    finding = host.audit()
    result = engine_of(finding, engine)
    assert 'bug in homelab.postmortem' not in finding['summary'] + result['summary']
    assert fragment in json.dumps(result), result


@pytest.mark.parametrize('option', ['--model-loader-extra-config', '--kernel-config', '--quantization-config',
                                    '--speculative-config'])
def test_engine_json_options_without_bounds_never_cost_the_detection(tmp_path, option):
    host = Host(tmp_path)
    base = write_checkpoint(str(tmp_path / 'base'), 1)
    host.start('preload', '--model', base, option, '[' * 100000 + ']' * 100000)
    engine = host.start('serve', base, '--load-format', 'ipc_cache', option, '{"a": ' * 5000 + '1' + '}' * 5000)
    started = time.monotonic()
    finding = host.audit()
    assert time.monotonic() - started <= BOUND_S
    json.dumps(json_safe(finding), allow_nan=False)
    assert 'bug in homelab.postmortem' not in finding['summary'] + engine_of(finding, engine)['summary']
