import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import config as rpi_config
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError


def config(tmp_path, text, name='config.txt', raw=None):
    path = tmp_path / name
    path.write_bytes(raw if raw is not None else text.encode())
    return str(path)


def overlays(path):
    return [(o.name, o.line.lineno, o.params) for o in rpi_config.parse(path).overlays()]


def test_sections_model_filters_and_all(tmp_path):
    path = config(tmp_path, '\n'.join([
        '# comment dtoverlay=pwm-ir-tx',
        'dtoverlay=vc4-kms-v3d',
        '[pi4]',
        'dtoverlay=pwm-ir-tx,gpiopin=17',
        '[pi5]',
        'dtoverlay=pwm-ir-tx',
        '[all]',
        'dtoverlay=gpio-ir,gpio_pin=23',
        '[none]',
        'dtoverlay=pwm-ir-tx',
        '[all]',
    ]))
    parsed = rpi_config.parse(path)
    lines = {o.line.lineno: o for o in parsed.overlays()}
    assert lines[4].param('gpiopin') == '17'
    assert lines[4].line.applies('pi4') == 'yes'
    assert lines[4].line.applies('pi400') == 'yes'  # a Pi 400 also sees [pi4]
    assert lines[4].line.applies('pi5') == 'no'
    assert lines[4].line.applies(None) == 'maybe'
    assert lines[4].line.boards() == ['cm4', 'cm4s', 'pi4', 'pi400']
    assert lines[6].line.applies('pi4') == 'no' and lines[6].line.applies('pi5') == 'yes'
    assert lines[8].line.applies('pi4') == 'yes' and lines[8].line.section() == '[all]'
    assert lines[10].line.applies('pi4') == 'no' and lines[10].line.boards() == []
    # The comment is not a line at all.
    assert 1 not in lines


def test_same_type_filters_replace_each_other_and_other_types_combine(tmp_path):
    path = config(tmp_path, '[pi4]\n[pi400]\ndtoverlay=pwm-ir-tx\n[EDID=DEL-DELL_U2422H]\ndtoverlay=pwm-ir-tx,gpiopin=12\n')
    first, second = rpi_config.parse(path).overlays()
    assert first.line.applies('pi4') == 'no' and first.line.applies('pi400') == 'yes'
    assert second.line.applies('pi400') == 'maybe'  # also needs that monitor at boot
    assert second.line.section() == '[pi400] [EDID=DEL-DELL_U2422H]'


def test_crlf_missing_final_newline_colon_params_and_dtparam(tmp_path):
    path = config(tmp_path, None, raw=b'dtoverlay=pwm-ir-tx:gpiopin=5\r\ndtparam=invert=1\r\ndtoverlay=gpio-ir-tx,gpio_pin=6')
    parsed = rpi_config.parse(path).overlays()
    assert [(o.name, o.param('gpiopin'), o.param('invert')) for o in parsed] == [
        ('pwm-ir-tx', '5', '1'), ('gpio-ir-tx', None, None)]
    assert parsed[1].param('gpio_pin') == '6'
    assert parsed[0].line.text.endswith('gpiopin=5')


def test_include_is_inline_and_gated_by_the_include_line(tmp_path):
    config(tmp_path, '[all]\ndtoverlay=pwm-ir-tx,gpiopin=22\n', name='ir.txt')
    config(tmp_path, 'dtoverlay=pwm-ir-tx\n', name='always.txt')
    path = config(tmp_path, '[pi3]\ninclude ir.txt\n[all]\ninclude always.txt\ninclude missing.txt\n')
    parsed = rpi_config.parse(path)
    gated, always = parsed.overlays()
    assert gated.line.path.endswith('ir.txt') and gated.line.lineno == 2
    # [all] inside the include resets filters, but the include itself only runs on a Pi 3.
    assert gated.line.applies('pi3') == 'yes'
    assert gated.line.applies('pi4') == 'no'
    assert always.line.applies('pi4') == 'yes'
    assert any('missing.txt' in n for n in parsed.notes)
    assert [os.path.basename(f) for f in parsed.files] == ['config.txt', 'ir.txt', 'always.txt']


def test_include_loop_binary_and_unreadable_include_are_errors(tmp_path):
    config(tmp_path, 'include b.txt\n', name='a.txt')
    config(tmp_path, 'include a.txt\n', name='b.txt')
    with pytest.raises(DetectionError, match='include loop'):
        rpi_config.parse(config(tmp_path, 'include a.txt\n'))
    with pytest.raises(DetectionError, match='not a text file'):
        rpi_config.parse(config(tmp_path, None, raw=b'\x7fELF\x00\x00'))
    (tmp_path / 'dir.txt').mkdir()
    with pytest.raises(DetectionError, match='cannot be read'):
        rpi_config.parse(config(tmp_path, 'include dir.txt\n'))


@pytest.mark.parametrize('model,board', [
    ('Raspberry Pi 4 Model B Rev 1.4', 'pi4'),
    ('Raspberry Pi 400 Rev 1.0', 'pi400'),
    ('Raspberry Pi Compute Module 4 Rev 1.0', 'cm4'),
    ('Raspberry Pi 3 Model B Plus Rev 1.3', 'pi3+'),
    ('Raspberry Pi 3 Model B Rev 1.2', 'pi3'),
    ('Raspberry Pi 5 Model B Rev 1.0', 'pi5'),
    ('Raspberry Pi Zero 2 W Rev 1.0', 'pi02'),
    ('Raspberry Pi Zero W Rev 1.1', 'pi0w'),
    ('QEMU Virtual Machine', None),
    (None, None),
])
def test_board_from_model(model, board):
    assert rpi_config.board_from_model(model) == board
