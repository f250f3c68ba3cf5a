"""The config.txt corpus for the pi_ir_tx fix: every case is a set of files before,
the board, and the exact bytes expected after. Second application must be a no-op."""
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import ir_tx_fix as pi_ir_tx_fix
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError

FOLD = pi_ir_tx_fix.FOLDED_MARK

CORPUS = {
    'plain default pin': (
        {'config.txt': b'dtparam=audio=on\ndtoverlay=pwm-ir-tx\n'}, 'pi4',
        {'config.txt': b'dtparam=audio=on\ndtoverlay=gpio-ir-tx,gpio_pin=18\n'}, []),
    'another pin, func dropped, invert kept': (
        {'config.txt': b'dtoverlay=pwm-ir-tx,gpiopin=13,func=4,invert=1\n'}, 'pi4',
        {'config.txt': b'dtoverlay=gpio-ir-tx,gpio_pin=13,invert=1\n'}, ['func=4']),
    'sections for other boards and [all] after': (
        {'config.txt': b'[pi3]\ndtoverlay=pwm-ir-tx,gpiopin=12\n[pi4]\ndtoverlay=pwm-ir-tx,gpiopin=19\n[all]\ndtoverlay=vc4-kms-v3d\n'},
        'pi4',
        {'config.txt': b'[pi3]\ndtoverlay=pwm-ir-tx,gpiopin=12\n[pi4]\ndtoverlay=gpio-ir-tx,gpio_pin=19\n[all]\ndtoverlay=vc4-kms-v3d\n'},
        []),
    'unknown board (image): every board-specific line': (
        {'config.txt': b'[pi3]\ndtoverlay=pwm-ir-tx,gpiopin=12\n[pi4]\ndtoverlay=pwm-ir-tx\n[none]\ndtoverlay=pwm-ir-tx\n[all]\n'},
        None,
        {'config.txt': b'[pi3]\ndtoverlay=gpio-ir-tx,gpio_pin=12\n[pi4]\ndtoverlay=gpio-ir-tx,gpio_pin=18\n[none]\ndtoverlay=pwm-ir-tx\n[all]\n'},
        []),
    'comments and a receiver line are untouched': (
        {'config.txt': b'# dtoverlay=pwm-ir-tx\ndtoverlay=gpio-ir,gpio_pin=23\n  dtoverlay=pwm-ir-tx,gpiopin=18\n'}, 'pi4',
        {'config.txt': b'# dtoverlay=pwm-ir-tx\ndtoverlay=gpio-ir,gpio_pin=23\n  dtoverlay=gpio-ir-tx,gpio_pin=18\n'}, []),
    'two transmitters': (
        {'config.txt': b'dtoverlay=pwm-ir-tx,gpiopin=18\ndtoverlay=pwm-ir-tx,gpiopin=13\n'}, 'pi4',
        {'config.txt': b'dtoverlay=gpio-ir-tx,gpio_pin=18\ndtoverlay=gpio-ir-tx,gpio_pin=13\n'}, []),
    'CRLF and no final newline': (
        {'config.txt': b'[all]\r\ndtoverlay=pwm-ir-tx,gpiopin=17\r\ndisable_splash=1'}, 'pi4',
        {'config.txt': b'[all]\r\ndtoverlay=gpio-ir-tx,gpio_pin=17\r\ndisable_splash=1'}, []),
    'last line without newline is the overlay': (
        {'config.txt': b'arm_64bit=1\ndtoverlay=pwm-ir-tx'}, 'pi5',
        {'config.txt': b'arm_64bit=1\ndtoverlay=gpio-ir-tx,gpio_pin=18'}, []),
    'line in an include file stays there': (
        {'config.txt': b'[all]\ninclude extra.txt\n', 'extra.txt': b'dtoverlay=pwm-ir-tx,gpiopin=17\n'}, 'pi4',
        {'config.txt': b'[all]\ninclude extra.txt\n', 'extra.txt': b'dtoverlay=gpio-ir-tx,gpio_pin=17\n'}, []),
    'dtparam lines fold into the new line': (
        {'config.txt': b'dtoverlay=pwm-ir-tx\ndtparam=gpiopin=5\ndtparam=invert=1\ndtoverlay=i2c-rtc\n'}, 'pi4',
        {'config.txt': ('dtoverlay=gpio-ir-tx,gpio_pin=5,invert=1\n%sdtparam=gpiopin=5\n%sdtparam=invert=1\ndtoverlay=i2c-rtc\n'
                        % (FOLD, FOLD)).encode()}, []),
    'already fixed': (
        {'config.txt': b'dtoverlay=gpio-ir-tx,gpio_pin=18\n'}, 'pi4',
        {'config.txt': b'dtoverlay=gpio-ir-tx,gpio_pin=18\n'}, []),
}


def write_tree(tmp_path, files):
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return str(tmp_path / 'config.txt')


def apply(path, board):
    _config, replacements = pi_ir_tx_fix.plan(path, board)
    changes = pi_ir_tx_fix.rewrite(replacements)
    for file_path, (_before, after) in changes.items():
        with open(file_path, 'wb') as handle:
            handle.write(after.encode())
    return replacements, changes


@pytest.mark.parametrize('case', sorted(CORPUS))
def test_corpus(tmp_path, case):
    before, board, expected, dropped = CORPUS[case]
    path = write_tree(tmp_path, before)
    replacements, changes = apply(path, board)
    for name, data in expected.items():
        assert (tmp_path / name).read_bytes() == data, name
    assert [d for r in replacements for d in r.dropped] == dropped
    assert bool(changes) == (before != expected)
    # Idempotent: the fixed tree plans nothing.
    again, changes_again = apply(path, board)
    assert again == [] and changes_again == {}


def test_replacement_report(tmp_path):
    path = write_tree(tmp_path, {'config.txt': b'[pi4]\ndtoverlay=pwm-ir-tx,gpiopin=17,func=2\n'})
    replacement = pi_ir_tx_fix.plan(path, 'pi4')[1][0].as_dict()
    assert replacement == {
        'file': path, 'line': 2, 'section': '[pi4]', 'before': 'dtoverlay=pwm-ir-tx,gpiopin=17,func=2',
        'after': 'dtoverlay=gpio-ir-tx,gpio_pin=17', 'pin': '17', 'dropped_params': ['func=2'],
        'folded_dtparam_lines': []}


@pytest.mark.parametrize('files,reason', [
    ({'config.txt': b'dtoverlay=pwm-ir-tx,gpiopin=eighteen\n'}, "gpiopin='eighteen' is not a pin number"),
    ({'config.txt': b'dtoverlay=pwm-ir-tx,gpiopin\n'}, 'gpiopin=None is not a pin number'),
    ({'config.txt': b'\x00\x01\x02'}, 'not a text file'),
    ({'config.txt': b'include a.txt\n', 'a.txt': b'include config.txt\n'}, 'include loop'),
])
def test_bad_input_changes_nothing(tmp_path, files, reason):
    path = write_tree(tmp_path, files)
    with pytest.raises(DetectionError, match=reason):
        pi_ir_tx_fix.plan(path, 'pi4')
    for name, data in files.items():
        assert (tmp_path / name).read_bytes() == data


def test_unreadable_include_is_an_error(tmp_path):
    path = write_tree(tmp_path, {'config.txt': b'dtoverlay=pwm-ir-tx\ninclude sub\n'})
    os.mkdir(str(tmp_path / 'sub'))
    with pytest.raises(DetectionError, match='cannot be read'):
        pi_ir_tx_fix.plan(path, 'pi4')
