"""The Modelfile reader (plugins/module_utils/ollama/modelfile.py) against upstream's own parser tests.

The cases are those of ollama/ollama parser/parser_test.go @ v0.33.0-rc2 (fb3076099), as data: each
input and the Commands (or the error) ParseFile gives for it, with the test's name and line. No Ollama
binary can run here; its parser's tests are the oracle.
"""
import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import chat_path, modelfile

LLAMA3 = ('{{ if .System }}<|start_header_id|>system<|end_header_id|>\n\n{{ .System }}<|eot_id|>{{ end }}'
          '{{ if .Prompt }}<|start_header_id|>user<|end_header_id|>\n\n{{ .Prompt }}<|eot_id|>{{ end }}'
          '<|start_header_id|>assistant<|end_header_id|>\n\n{{ .Response }}<|eot_id|>')

CASES = [
    # TestParseFileTrimSpace (l.123-154)
    ('\nFROM "     model 1"\nADAPTER      adapter3\nLICENSE "MIT       "\nPARAMETER param1        value1\n'
     'PARAMETER param2    value2\nTEMPLATE """   ' + LLAMA3 + '   """    \n',
     [('model', '     model 1'), ('adapter', 'adapter3'), ('license', 'MIT       '), ('param1', 'value1'),
      ('param2', 'value2'), ('template', '   ' + LLAMA3 + '   ')]),
    # TestParseFileFrom (l.156-236)
    ('FROM "FOO  BAR  "', [('model', 'FOO  BAR  ')]),
    ('FROM "FOO BAR"\nPARAMETER param1 value1', [('model', 'FOO BAR'), ('param1', 'value1')]),
    ('FROM     FOOO BAR    ', [('model', 'FOOO BAR')]),
    ('FROM /what/is/the path ', [('model', '/what/is/the path')]),
    ('FROM llama3:7b-instruct-q4_K_M', [('model', 'llama3:7b-instruct-q4_K_M')]),
    ('', 'no FROM line'),
    ('PARAMETER param1 value1', 'no FROM line'),
    ('PARAMETER what the \nFROM lemons make lemonade ', [('what', 'the'), ('model', 'lemons make lemonade')]),
    # TestParseFileParametersMissingValue (l.238-248), TestParseFileBadCommand (l.250-264)
    ('\nFROM foo\nPARAMETER param1\n', 'unexpected EOF'),
    ('\nFROM foo\nBADCOMMAND param1 value1\n', '(line 3): invalid command'),
    # TestParseFileRenderer / TestParseFileParser (l.266-292)
    ('\nFROM foo\nRENDERER renderer1\n', [('model', 'foo'), ('renderer', 'renderer1')]),
    ('\nFROM foo\nPARSER parser1\n', [('model', 'foo'), ('parser', 'parser1')]),
    # TestParseFileMessages (l.294-408)
    ('\nFROM foo\nMESSAGE system You are a file parser. Always parse things.',
     [('model', 'foo'), ('message', 'system: You are a file parser. Always parse things.')]),
    ('\nFROM foo\nMESSAGE system """\nYou are a multiline file parser. Always parse things.\n"""\n\t\t\t',
     [('model', 'foo'), ('message', 'system: \nYou are a multiline file parser. Always parse things.\n')]),
    ("\nFROM foo\nMESSAGE badguy I'm a bad guy!\n", 'message role must be one of'),
    ('\nFROM foo\nMESSAGE system\n', 'unexpected EOF'),
    ('\nFROM foo\nMESSAGE system', 'unexpected EOF'),
    # TestParseFileQuoted (l.410-562)
    ('\nFROM foo\nSYSTEM """\nThis is a\nmultiline system.\n"""\n\t\t\t',
     [('model', 'foo'), ('system', '\nThis is a\nmultiline system.\n')]),
    ('\nFROM foo\nSYSTEM """\nThis is a\nmultiline system."""\n\t\t\t',
     [('model', 'foo'), ('system', '\nThis is a\nmultiline system.')]),
    ('\nFROM foo\nSYSTEM """This is a\nmultiline system."""\n\t\t\t',
     [('model', 'foo'), ('system', 'This is a\nmultiline system.')]),
    ('\nFROM foo\nSYSTEM """This is a multiline system."""\n\t\t\t',
     [('model', 'foo'), ('system', 'This is a multiline system.')]),
    ('\nFROM foo\nSYSTEM """This is a multiline system.""\n\t\t\t', 'unexpected EOF'),
    ('\nFROM foo\nSYSTEM "\n\t\t\t', 'unexpected EOF'),
    ('\nFROM foo\nSYSTEM """\nThis is a multiline system with "quotes".\n"""\n',
     [('model', 'foo'), ('system', '\nThis is a multiline system with "quotes".\n')]),
    ('\nFROM foo\nSYSTEM """"""\n', [('model', 'foo'), ('system', '')]),
    ('\nFROM foo\nSYSTEM ""\n', [('model', 'foo'), ('system', '')]),
    ('\nFROM foo\nSYSTEM "\'"\n', [('model', 'foo'), ('system', "'")]),
    ('\nFROM foo\nSYSTEM """\'\'"\'""\'""\'"\'\'\'\'\'""\'""\'"""\n',
     [('model', 'foo'), ('system', '\'\'"\'""\'""\'"\'\'\'\'\'""\'""\'')]),
    ('\nFROM foo\nTEMPLATE """\n{{ .Prompt }}\n"""', [('model', 'foo'), ('template', '\n{{ .Prompt }}\n')]),
    # TestParseFileParameters (l.564-614), a few
    ('FROM foo\nPARAMETER stop ### User: \n', [('model', 'foo'), ('stop', '### User:')]),
    ('FROM foo\nPARAMETER stop "### User: "\n', [('model', 'foo'), ('stop', '### User: ')]),
    ('FROM foo\nPARAMETER stop """### User:\n"""\n', [('model', 'foo'), ('stop', '### User:\n')]),
    # TestParseFileComments (l.616-639), TestParseMultiByte (l.740-766, UTF-8)
    ('\n# comment\nFROM foo\n\t', [('model', 'foo')]),
    ('FROM test\n\tSYSTEM 你好👋', [('model', 'test'), ('system', '你好👋')]),
]


@pytest.mark.parametrize('text,expected', CASES)
def test_upstreams_parser_cases(text, expected):
    if isinstance(expected, str):
        with pytest.raises(modelfile.ModelfileError, match=expected.replace('(', r'\(').replace(')', r'\)')):
            modelfile.parse(text)
    else:
        assert modelfile.parse(text) == expected


@pytest.mark.parametrize('template,read', [
    (LLAMA3, LLAMA3), ('{{ .Prompt }}', '{{ .Prompt }}'), (' leading space', ' leading space'),
    ('trailing space ', 'trailing space '), ('a "quoted" word', 'a "quoted" word'),
    ('line one\nline "two"', 'line one\nline "two"'), ('\n', '\n'), ('', ''),
    # quote() leaves these bare, and unquote() then takes the quotes for quoting: upstream's writer and
    # reader disagree (the second does not even parse), so chat_path also compares the text written.
    ('"all quoted"', 'all quoted'), ('"""', modelfile.ModelfileError),
])
def test_quote_then_parse_as_upstream_round_trips(template, read):
    """TestParseFileFormatParseFile (l.641-702) holds ParseFile(m.String()) == m for its cases; these are
    quote() (parser.go l.644-654, chat_path.go_quote) followed by ParseFile."""
    written = '# Modelfile generated by "ollama show"\nFROM foo\nTEMPLATE %s\n' % chat_path.go_quote(template)
    if read is modelfile.ModelfileError:
        with pytest.raises(modelfile.ModelfileError, match='unexpected EOF'):
            modelfile.parse(written)
    else:
        assert modelfile.last(modelfile.parse(written), 'template') == read
