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
    assert lines[4].param('gpiopin') == '17'  # as written: whether pwm-ir-tx has such a parameter is not the reader's business
    assert lines[4].line.applies('pi4') == 'yes'
    assert lines[4].line.applies('pi400') == 'yes'  # a Pi 400 also sees [pi4]
    assert lines[4].line.applies('pi5') == 'no'
    assert lines[4].line.applies(None) == 'maybe'
    assert lines[4].line.boards() == ['cm4', 'cm4s', 'pi4', 'pi400']
    assert lines[6].line.applies('pi4') == 'no' and lines[6].line.applies('pi5') == 'yes'
    assert lines[8].line.applies('pi4') == 'yes' and lines[8].line.section() == '[all]'
    # A line under [none] is in the stream but loads nothing on any board.
    assert 10 not in lines
    none_line = [line for line in parsed.lines if line.lineno == 10][0]
    assert none_line.applies('pi4') == 'no' and none_line.boards() == []
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


# The Raspberry Pi documentation, documentation/asciidoc/computers/config_txt/what_is_config_txt.adoc,
# "include": "Causes the content of the specified file to be inserted into the current file."
# conditional.adoc: "The [all] filter ... resets all previously set filters"; "The [none] filter prevents
# any settings that follow from being applied to any hardware."


def test_include_is_text_inserted_where_the_include_line_stands(tmp_path):
    """An [all] in the inserted text ends the [none] open at the include line, for its own lines and the
    lines after the include: inserted text is read as if written there."""
    config(tmp_path, '[all]\ndtoverlay=pwm-ir-tx,gpio_pin=22\n', name='ir.txt')
    path = config(tmp_path, '[none]\ninclude ir.txt\ndtoverlay=vc4-kms-v3d\n')
    parsed = rpi_config.parse(path)
    ir_line, after = parsed.lines
    assert ir_line.path.endswith('ir.txt') and ir_line.lineno == 2
    assert [ir_line.applies(b) for b in ('pi3', 'pi4', None)] == ['yes', 'yes', 'yes']
    assert after.applies('pi4') == 'yes'
    assert ir_line.included_from == ('%s:2' % path,)
    assert ir_line.where() == '%s:2 (inserted by include at %s:2)' % (ir_line.path, path)


def test_lines_of_an_include_carry_the_filters_open_at_it_and_its_filters_carry_on_after_it(tmp_path):
    config(tmp_path, 'dtoverlay=pwm-ir-tx\n', name='ir.txt')
    config(tmp_path, '[pi5]\n', name='pi5.txt')
    path = config(tmp_path, '[pi3]\ninclude ir.txt\n[all]\ninclude pi5.txt\ndtoverlay=pwm-ir-tx,gpio_pin=12\n')
    gated, after = rpi_config.parse(path).overlays()
    assert (gated.line.applies('pi3'), gated.line.applies('pi4')) == ('yes', 'no')
    assert gated.line.conditions.origins() == ['[pi3] at %s:1' % path]
    # The [pi5] set inside pi5.txt is in force at config.txt:5.
    assert (after.line.applies('pi5'), after.line.applies('pi4')) == ('yes', 'no')
    assert after.line.conditions.origins() == ['[pi5] at %s:1' % str(tmp_path / 'pi5.txt')]


def test_a_file_included_twice_is_read_twice_each_time_with_the_filters_in_force(tmp_path):
    config(tmp_path, 'dtoverlay=pwm-ir-tx\n', name='ir.txt')
    path = config(tmp_path, '[pi4]\ninclude ir.txt\n[none]\ninclude ir.txt\n[all]\ninclude missing.txt\n')
    parsed = rpi_config.parse(path)
    first, second = parsed.lines
    assert first.physical() == second.physical()
    assert (first.applies('pi4'), second.applies('pi4')) == ('yes', 'no')
    assert [o.line for o in parsed.overlays('pi4')] == [first]
    assert any('missing.txt' in n for n in parsed.notes)
    assert [os.path.basename(f) for f in parsed.files] == ['config.txt', 'ir.txt', 'ir.txt']


def test_includes_that_multiply_are_an_error_not_a_hang(tmp_path):
    config(tmp_path, 'dtparam=audio=on\n' * 50, name='leaf.txt')
    for level in range(6):
        below = 'leaf.txt' if level == 0 else 'l%d.txt' % (level - 1)
        config(tmp_path, ('include %s\n' % below) * 20, name='l%d.txt' % level)
    with pytest.raises(DetectionError, match='more than'):
        rpi_config.parse(config(tmp_path, 'include l5.txt\n'))


# Case: the documentation says nothing. configuration/device-tree.adoc part 3.1: "dtoverlay=acme-board ...
# will cause the loader to look for overlays/acme-board.dtbo in the firmware partition" - a FAT partition,
# whose names have no case (tests/e2e/test_pi_ir_tx_fat.py opens them on a real FAT filesystem).


def test_overlay_names_and_keys_are_read_without_case(tmp_path):
    path = config(tmp_path, 'DTOVERLAY=PWM-IR-TX,gpio_pin=17\nDtParam=func=4\ndtoverlay=Gpio-IR-Tx\n')
    pwm, gpio = rpi_config.parse(path).overlays('pi4')
    assert (pwm.name, pwm.written, gpio.name) == ('pwm-ir-tx', 'PWM-IR-TX', 'gpio-ir-tx')
    assert [p.text() for p in pwm.params] == ['gpio_pin=17', 'func=4']
    # Parameter names are device-tree property names, compared exactly: GPIO_PIN is not gpio_pin.
    odd = rpi_config.parse(config(tmp_path, 'dtoverlay=pwm-ir-tx,GPIO_PIN=17,gpiopin=5\n', name='odd.txt')).overlays()[0]
    assert odd.setting('gpio_pin', '18', 'default') == ('18', 'default')
    assert [(p.text(), meant) for p, meant in odd.near_misses(('gpio_pin', 'func'))] == [
        ('GPIO_PIN=17', 'gpio_pin'), ('gpiopin=5', 'gpio_pin')]


def test_an_include_written_in_another_case_opens_the_file_fat_would(tmp_path):
    config(tmp_path, 'dtoverlay=pwm-ir-tx\n', name='extra.txt')
    parsed = rpi_config.parse(config(tmp_path, 'INCLUDE Extra.TXT\n'))
    assert [os.path.basename(f) for f in parsed.files] == ['config.txt', 'extra.txt']
    assert 'FAT matches names without case' in parsed.notes[0]
    # Two files FAT could not tell apart (a card copied to a case-sensitive filesystem): say so.
    config(tmp_path, 'dtoverlay=gpio-ir-tx\n', name='EXTRA.txt')
    with pytest.raises(DetectionError, match='could be EXTRA.txt or extra.txt'):
        rpi_config.parse(config(tmp_path, 'include Extra.TXT\n'))


# device-tree.adoc part 3.2: dtparam= lines after an overlay are its parameters; "Overlay parameters are
# only in scope until the next overlay is loaded"; "end the current overlay scope using: dtoverlay=".


def test_a_dtparam_belongs_to_the_overlay_loaded_before_it_on_that_board(tmp_path):
    path = config(tmp_path, '[pi4]\ndtoverlay=pwm-ir-tx\n[pi5]\ndtoverlay=i2c-rtc\n[all]\ndtparam=gpio_pin=17\n'
                            'dtoverlay=pwm-ir-tx\ndtoverlay=\ndtparam=gpio_pin=5\n'
                            'dtoverlay=pwm-ir-tx\ndtoverlay=none\ndtparam=gpio_pin=6\n')
    parsed = rpi_config.parse(path)
    on_pi4 = parsed.overlays('pi4')
    assert [o.setting('gpio_pin', '18', 'default') for o in on_pi4] == [
        ('17', '%s:6' % path), ('18', 'default'), ('18', 'default')]
    on_pi5 = parsed.overlays('pi5')
    assert [o.name for o in on_pi5] == ['i2c-rtc', 'pwm-ir-tx', 'pwm-ir-tx']
    assert on_pi5[0].param('gpio_pin') == '17'
    assert sorted(parsed.overlays_by_board()) == sorted(rpi_config.BOARD_FILTERS)


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
