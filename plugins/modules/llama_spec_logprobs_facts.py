#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: llama_spec_logprobs_facts
short_description: Find llama-server instances whose logprobs are placeholders under speculative decoding
version_added: 0.1.0
description:
  - Finds llama-server processes started with speculative decoding (C(--spec-type) other than
    C(none), or C(--spec-default); C(-md) alone does not turn it on). Tokens from the speculative
    loop come back with logprob 0.0 and no alternatives. Status C(at_risk) from the command line.
  - With I(probes=[spec_logprobs]) it asks the server, on loopback. C(/slots) says whether a slot
    speculates (C(/props) always says C(none)), then one C(/completion) with C(n_probs=3),
    temperature 0 and 16 tokens counts the tokens after the first that came back without
    alternatives. C(affected) with the counts, or C(ok). Two requests; an API key is sent and
    never recorded.
  - Returns C(ansible_facts.postmortem.llama_spec_logprobs); the same detection runs in
    M(homelab.postmortem.audit_facts).
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Measure logprobs on every llama-server
  homelab.postmortem.llama_spec_logprobs_facts:
    probes: [spec_logprobs]
  become: true
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(llama_spec_logprobs).
      returned: always
      type: complex
      contains:
        llama_spec_logprobs:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - Each process instance's evidence holds C(pid), C(argv), C(spec_types),
              C(spec_type_source), C(draft_model), C(spec_default), and with the probe C(probe)
              (C(slots_speculative), C(tokens), C(after_first), C(empty_alternatives),
              C(zero_logprob), C(first_alternatives), C(n_probs), C(verdict), C(reason), C(requests)).
          returned: always
          type: dict
          sample:
            id: llama_spec_logprobs
            status: affected
            summary: "Measured: 15 of 15 tokens after the first came back with logprob 0.0 and no alternatives (asked for 3)."
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('llama_spec_logprobs')


if __name__ == '__main__':
    main()
