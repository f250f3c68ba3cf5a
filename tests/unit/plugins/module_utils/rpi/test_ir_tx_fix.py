"""The config.txt corpus for the pi_ir_tx fix: every case is a set of files before,
the board, and the exact bytes expected after. Second application must be a no-op.

The overlays' parameters are their __overrides__ (raspberrypi/linux, arch/arm/boot/dts/overlays/):
pwm-ir-tx-overlay.dts has ``gpio_pin`` and ``func``, gpio-ir-tx-overlay.dts has ``gpio_pin`` and
``invert``; both put the pin on 18 by default (``brcm,pins = <18>``). The Raspberry Pi documentation,
configuration/device-tree.adoc part 3.2: dtparam= lines after a dtoverlay= are its parameters, "Overlay
parameters are only in scope until the next overlay is loaded", a parameter both the overlay and the base
define goes to the overlay ("the parameter in the overlay takes precedence"), one it lacks to the base.
config_txt/what_is_config_txt.adoc: include "Causes the content of the specified file to be inserted
into the current file"; conditional.adoc: "[all] ... resets all previously set filters".
"""
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import ir_tx_fix as pi_ir_tx_fix
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError

EMPTIED = pi_ir_tx_fix.EMPTIED_MARK

CORPUS = {
    'plain default pin': (
        {'config.txt': b'dtparam=audio=on\ndtoverlay=pwm-ir-tx\n'}, 'pi4',
        {'config.txt': b'dtparam=audio=on\ndtoverlay=gpio-ir-tx,gpio_pin=18\n'}, []),
    'another pin, func dropped': (
        {'config.txt': b'dtoverlay=pwm-ir-tx,gpio_pin=13,func=4\n'}, 'pi4',
        {'config.txt': b'dtoverlay=gpio-ir-tx,gpio_pin=13\n'}, ['func=4']),
    'a base parameter on the overlay line keeps going to the base': (
        {'config.txt': b'dtoverlay=pwm-ir-tx,gpio_pin=13,audio=on\n'}, 'pi4',
        {'config.txt': b'dtoverlay=gpio-ir-tx,gpio_pin=13,audio=on\n'}, []),
    'sections for other boards and [all] after': (
        {'config.txt': b'[pi3]\ndtoverlay=pwm-ir-tx,gpio_pin=12\n[pi4]\ndtoverlay=pwm-ir-tx,gpio_pin=19\n[all]\ndtoverlay=vc4-kms-v3d\n'},
        'pi4',
        {'config.txt': b'[pi3]\ndtoverlay=pwm-ir-tx,gpio_pin=12\n[pi4]\ndtoverlay=gpio-ir-tx,gpio_pin=19\n[all]\ndtoverlay=vc4-kms-v3d\n'},
        []),
    'unknown board (image): every board-specific line': (
        {'config.txt': b'[pi3]\ndtoverlay=pwm-ir-tx,gpio_pin=12\n[pi4]\ndtoverlay=pwm-ir-tx\n[none]\ndtoverlay=pwm-ir-tx\n[all]\n'},
        None,
        {'config.txt': b'[pi3]\ndtoverlay=gpio-ir-tx,gpio_pin=12\n[pi4]\ndtoverlay=gpio-ir-tx,gpio_pin=18\n[none]\ndtoverlay=pwm-ir-tx\n[all]\n'},
        []),
    'comments and a receiver line are untouched': (
        {'config.txt': b'# dtoverlay=pwm-ir-tx\ndtoverlay=gpio-ir,gpio_pin=23\n  dtoverlay=pwm-ir-tx,gpio_pin=18\n'}, 'pi4',
        {'config.txt': b'# dtoverlay=pwm-ir-tx\ndtoverlay=gpio-ir,gpio_pin=23\n  dtoverlay=gpio-ir-tx,gpio_pin=18\n'}, []),
    'two transmitters': (
        {'config.txt': b'dtoverlay=pwm-ir-tx,gpio_pin=18\ndtoverlay=pwm-ir-tx,gpio_pin=13\n'}, 'pi4',
        {'config.txt': b'dtoverlay=gpio-ir-tx,gpio_pin=18\ndtoverlay=gpio-ir-tx,gpio_pin=13\n'}, []),
    'CRLF and no final newline': (
        {'config.txt': b'[all]\r\ndtoverlay=pwm-ir-tx,gpio_pin=17\r\ndisable_splash=1'}, 'pi4',
        {'config.txt': b'[all]\r\ndtoverlay=gpio-ir-tx,gpio_pin=17\r\ndisable_splash=1'}, []),
    'last line without newline is the overlay': (
        {'config.txt': b'arm_64bit=1\ndtoverlay=pwm-ir-tx'}, 'pi5',
        {'config.txt': b'arm_64bit=1\ndtoverlay=gpio-ir-tx,gpio_pin=18'}, []),
    'line in an include file stays there': (
        {'config.txt': b'[all]\ninclude extra.txt\n', 'extra.txt': b'dtoverlay=pwm-ir-tx,gpio_pin=17\n'}, 'pi4',
        {'config.txt': b'[all]\ninclude extra.txt\n', 'extra.txt': b'dtoverlay=gpio-ir-tx,gpio_pin=17\n'}, []),
    'an [all] in an include ends the [none] open at it': (
        {'config.txt': b'[none]\ninclude ir.txt\n', 'ir.txt': b'[all]\ndtoverlay=pwm-ir-tx,gpio_pin=17\n'}, 'pi4',
        {'config.txt': b'[none]\ninclude ir.txt\n', 'ir.txt': b'[all]\ndtoverlay=gpio-ir-tx,gpio_pin=17\n'}, []),
    'an include without [all] stays under the [none] open at it': (
        {'config.txt': b'[none]\ninclude ir.txt\n', 'ir.txt': b'dtoverlay=pwm-ir-tx\n'}, None,
        {'config.txt': b'[none]\ninclude ir.txt\n', 'ir.txt': b'dtoverlay=pwm-ir-tx\n'}, []),
    'a name in another case, the include in another case': (
        {'config.txt': b'include IR.TXT\n', 'ir.txt': b'DTOVERLAY=PWM-IR-TX,gpio_pin=22\n'}, 'pi4',
        {'config.txt': b'include IR.TXT\n', 'ir.txt': b'dtoverlay=gpio-ir-tx,gpio_pin=22\n'}, []),
    'dtparam lines keep gpio_pin (the same for gpio-ir-tx) and lose func': (
        {'config.txt': b'dtoverlay=pwm-ir-tx\ndtparam=gpio_pin=5\ndtparam=func=2\ndtparam=func=4,audio=on\ndtoverlay=i2c-rtc\n'
                       b'dtparam=func=9\n'}, 'pi4',
        {'config.txt': ('dtoverlay=gpio-ir-tx,gpio_pin=18\ndtparam=gpio_pin=5\n%sdtparam=func=2\ndtparam=audio=on\n'
                        'dtoverlay=i2c-rtc\ndtparam=func=9\n' % EMPTIED).encode()}, ['func=2', 'func=4']),
    'a dtparam after the section ends still belongs to the overlay on that board': (
        {'config.txt': b'[pi4]\ndtoverlay=pwm-ir-tx\n[all]\ndtparam=func=2\n'}, 'pi4',
        {'config.txt': ('[pi4]\ndtoverlay=gpio-ir-tx,gpio_pin=18\n[all]\n%sdtparam=func=2\n' % EMPTIED).encode()},
        ['func=2']),
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
    path = write_tree(tmp_path, {'config.txt': b'[pi4]\ninclude ir.txt\n',
                                 'ir.txt': b'dtoverlay=pwm-ir-tx,gpio_pin=17,func=2\ndtparam=gpio_pin=27\n'})
    replacement = pi_ir_tx_fix.plan(path, 'pi4')[1][0].as_dict()
    ir = str(tmp_path / 'ir.txt')
    assert replacement == {
        'file': ir, 'line': 1, 'included_from': ['%s:2' % path], 'section': '[pi4]',
        'filters': ['[pi4] at %s:1' % path], 'before': 'dtoverlay=pwm-ir-tx,gpio_pin=17,func=2',
        'after': 'dtoverlay=gpio-ir-tx,gpio_pin=17', 'pin': '27', 'pin_set_at': ['%s:2' % ir],
        'dropped_params': ['func=2'], 'dtparam_lines': []}


@pytest.mark.parametrize('files,reason', [
    ({'config.txt': b'dtoverlay=pwm-ir-tx,gpio_pin=eighteen\n'}, "gpio_pin='eighteen' is not a pin number"),
    ({'config.txt': b'dtoverlay=pwm-ir-tx,gpio_pin\n'}, 'gpio_pin=None is not a pin number'),
    ({'config.txt': b'dtoverlay=pwm-ir-tx\ndtparam=gpio_pin=x\n'}, "config.txt:2: gpio_pin='x' is not a pin number"),
    # Not pwm-ir-tx's parameter names: the firmware did not take them as the pin.
    ({'config.txt': b'dtoverlay=pwm-ir-tx,gpiopin=17\n'}, 'gpiopin=17 is not a parameter of pwm-ir-tx'),
    ({'config.txt': b'dtoverlay=pwm-ir-tx\ndtparam=GPIO_PIN=17\n'}, 'GPIO_PIN=17 is not a parameter of pwm-ir-tx'),
    # invert is gpio-ir-tx's, not pwm-ir-tx's: it would start to invert the output.
    ({'config.txt': b'dtoverlay=pwm-ir-tx,invert=1\n'}, 'after the switch it would invert the output'),
    ({'config.txt': b'dtoverlay=pwm-ir-tx\ndtparam=invert\n'}, 'after the switch it would invert the output'),
    ({'config.txt': b'dtoverlay=pwm-ir-tx # transmitter\n'}, 'has a "#" after the overlay name'),
    # A dtparam line included twice: func for pwm-ir-tx here, for the pwm overlay there.
    ({'config.txt': b'dtoverlay=pwm-ir-tx\ninclude f.txt\ndtoverlay=pwm\ninclude f.txt\n', 'f.txt': b'dtparam=func=2\n'},
     'f.txt:1 \\(inserted by include at .*config.txt:2\\): dtparam=func=2 sets func for pwm-ir-tx'),
    # On a Pi 5 the same dtparam line sets func for the base device tree.
    ({'config.txt': b'[pi4]\ndtoverlay=pwm-ir-tx\n[all]\ndtparam=func=2\n'}, 'on another board, for the base device tree'),
    ({'config.txt': b'\x00\x01\x02'}, 'not a text file'),
    ({'config.txt': b'include a.txt\n', 'a.txt': b'include config.txt\n'}, 'include loop'),
])
def test_bad_input_changes_nothing(tmp_path, files, reason):
    path = write_tree(tmp_path, files)
    board = None if 'base device tree' in reason else 'pi4'
    with pytest.raises(DetectionError, match=reason):
        pi_ir_tx_fix.plan(path, board)
    for name, data in files.items():
        assert (tmp_path / name).read_bytes() == data


def test_unreadable_include_is_an_error(tmp_path):
    path = write_tree(tmp_path, {'config.txt': b'dtoverlay=pwm-ir-tx\ninclude sub\n'})
    os.mkdir(str(tmp_path / 'sub'))
    with pytest.raises(DetectionError, match='cannot be read'):
        pi_ir_tx_fix.plan(path, 'pi4')
