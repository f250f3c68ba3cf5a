"""plugins/module_utils/systemd_unit.UnitFile reads a unit as systemd 252 does: the oracle is
tests/unit/helpers/systemd_syntax.py, a reader written from systemd's source (fileio.c read_line_full,
conf-parser.c config_parse/parse_line) and checked against `systemd-analyze verify`'s warnings."""
import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import systemd_unit

from ...helpers.systemd_syntax import Unit

CASES = [
    '[Service]\nExecStart=/bin/llama-server -m m.gguf\n',
    '[Service]\r\nEnvironment=A=1\r\nExecStart=/bin/x\r\n',
    # Python's splitlines() splits at these; systemd keeps them inside the value.
    '[Service]\nEnvironment=A=1\x0cLLAMA_ARG_CACHE_PROMPT=0\n',
    '[Service]\nEnvironment=A=1\x0bB=2\x1cC=3\x1dD\x1eE\x85F\u2028G\u2029H=4\n',
    # A bare CR ends a line for systemd.
    '[Service]\nEnvironment=A=1\rLLAMA_ARG_CACHE_PROMPT=0\n',
    # Continuations: a space in the backslash's place; comment lines inside are skipped; an escaped
    # backslash does not continue; a trailing backslash at the end of the file.
    '[Service]\nExecStart=/bin/x \\\n  --flag \\\n# a comment\n  --other\nUser=a\n',
    '[Service]\nExecStart=/bin/x \\\n; another\n--cache-ram 0\n',
    '[Service]\nExecStart=/bin/x \\\\\nUser=b\n',
    '[Service]\nExecStart=/bin/x \\',
    '[Service]\n  Environment = A=1 \t\nExecStart=\n',
]


@pytest.mark.parametrize('text', CASES)
def test_entries_are_systemds(text):
    ours = [(e.section, e.key, e.value) for e in systemd_unit.UnitFile(text).entries]
    assert ours == Unit(text.encode('utf-8'), {'Service'}).entries


@pytest.mark.parametrize('text', CASES)
def test_the_lines_are_the_file(text):
    assert ''.join(systemd_unit.UnitFile(text).lines) == text
