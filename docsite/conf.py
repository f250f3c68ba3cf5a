# Sphinx configuration of the documentation site `make docs` builds into build/docs (scripts/docs.sh
# assembles the source tree in build/docs-src: antsibull-docs' pages for every module and role, a page
# per playbook, the Markdown pages of docs/, README.md and CHANGELOG.rst).
#
# Offline by design: no intersphinx, nothing is fetched while building. The few labels of the
# Ansible documentation that antsibull-docs' pages refer to are resolved below to their addresses on
# docs.ansible.com (plain links, nothing downloaded); a new one fails the -W build as an undefined
# label until it is added to ANSIBLE_DOCS.
from docutils import nodes

project = 'homelab.postmortem'
copyright = 'homelab.postmortem contributors'  # pylint: disable=redefined-builtin
title = 'homelab.postmortem'
html_short_title = 'homelab.postmortem'
html_title = 'homelab.postmortem'

extensions = ['sphinx_antsibull_ext', 'myst_parser']
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
root_doc = 'index'

pygments_style = 'ansible'
highlight_language = 'YAML+Jinja'
html_theme = 'sphinx_ansible_theme'
html_show_sphinx = False
display_version = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False
html_theme_options = {'collapse_navigation': False}

default_role = 'any'
nitpicky = True

# docs/*.md link to each other's sections by their headings' anchors (#which-path-a-model-takes).
myst_heading_anchors = 4
myst_enable_extensions = ['deflist']

ANSIBLE_DOCS = 'https://docs.ansible.com/projects/ansible/latest/'
# label -> (page under ANSIBLE_DOCS, title)
ANSIBLE_LABELS = {
    'action_plugins': ('plugins/action.html#action-plugins', 'Action plugins'),
    'common_return_values': ('reference_appendices/common_return_values.html#common-return-values', 'Return Values'),
    'ansible_configuration_settings': ('reference_appendices/config.html#ansible-configuration-settings',
                                       'Ansible Configuration Settings'),
    # The summary stdout callback's page ("See callback_plugins for more information").
    'callback_plugins': ('plugins/callback.html#callback-plugins', 'Callback plugins'),
}


def _ansible_label(app, env, node, contnode):  # pylint: disable=unused-argument
    target = node.get('reftarget')
    if node.get('reftype') not in ('ref', 'any') or target not in ANSIBLE_LABELS:
        return None
    page, text = ANSIBLE_LABELS[target]
    reference = nodes.reference('', '', internal=False, refuri=ANSIBLE_DOCS + page)
    reference += contnode if node.get('refexplicit') else nodes.inline(text, text)
    return reference


def setup(app):
    app.connect('missing-reference', _ansible_label)
