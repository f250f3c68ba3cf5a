"""The documentation site (`make docs`, build/docs) in a real headless browser (Debian's chromium +
chromedriver): from the start page to a detection's page, and from there to its module's page,
by the links a reader follows. What each page must show comes from the collection itself: the
docs page's headings, the detection's settings, the module's documented options (ansible-doc)."""
import json
import os
import shutil
import subprocess

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from ansible_collections.homelab.postmortem.plugins.module_utils.registry import BY_ID
from helpers import BUILD, REPO_ROOT, VENV_BIN, ansible_env

SITE = os.path.join(BUILD, 'docs')
DETECTION = 'pi_ir_tx'


@pytest.fixture
def browser():
    chromium, driver = shutil.which('chromium'), shutil.which('chromedriver')
    if not (chromium and driver):
        pytest.fail('chromium and chromedriver are missing: run `make test-env` (scripts/setup-system.sh)')
    if not os.path.isfile(os.path.join(SITE, 'index.html')):
        pytest.fail('no docs site in %s: run `make docs`' % SITE)
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


def page_of(browser):
    return browser.current_url.split('#')[0]


def heading(browser, level='h1'):
    # Sphinx appends a pilcrow-like link glyph to every heading.
    return browser.find_element(By.TAG_NAME, level).text.rstrip('\uf0c1 ').strip()


def markdown_headings(page):
    with open(os.path.join(REPO_ROOT, 'docs', page + '.md'), encoding='utf-8') as handle:
        lines = handle.read().splitlines()
    return [line[2:].strip() for line in lines if line.startswith('# ')], \
        [line[3:].strip() for line in lines if line.startswith('## ')]


def documented_options(module):
    proc = subprocess.run([os.path.join(VENV_BIN, 'ansible-doc'), '--json', module], capture_output=True, text=True,
                          env=ansible_env(), timeout=120, check=True)
    return sorted(json.loads(proc.stdout)[module]['doc']['options'])


def test_detection_page_then_its_module_page(browser):
    title, sections = markdown_headings(DETECTION)
    browser.get('file://%s/index.html' % SITE)
    assert browser.title.startswith('homelab.postmortem')
    # The start page lists the detection under "Detections"; its link opens the page.
    browser.find_element(By.XPATH, '//div[@role="main"]//a[normalize-space()="%s"]' % title[0]).click()
    assert page_of(browser).endswith('/docs/%s.html' % DETECTION)
    assert heading(browser) == title[0]
    shown = [h.text.rstrip('\uf0c1 ').strip() for h in browser.find_elements(By.TAG_NAME, 'h2')]
    assert shown == sections
    # The generated settings block, as a table with one row per setting the detection validates.
    settings_table = browser.find_element(By.XPATH, '//h2[starts-with(normalize-space(), "Where it runs")]/following::table[1]')
    rows = [r.find_element(By.TAG_NAME, 'td').text for r in settings_table.find_elements(By.CSS_SELECTOR, 'tbody tr')]
    assert rows == sorted(BY_ID[DETECTION].SETTINGS)

    # The sidebar leads to the modules; the collection's index to this detection's facts module.
    browser.find_element(By.XPATH, '//nav//a[normalize-space()="Homelab.Postmortem"]').click()
    module = 'homelab.postmortem.%s_facts' % DETECTION
    browser.find_element(By.XPATH, '//div[@role="main"]//a[normalize-space()="%s_facts module"]' % DETECTION).click()
    assert page_of(browser).endswith('/collections/homelab/postmortem/%s_facts_module.html' % DETECTION)
    assert heading(browser).startswith('%s module' % module)
    # Top-level options only: a suboption's anchor is parameter-<option>/<suboption>.
    parameters = sorted(e.get_attribute('id')[len('parameter-'):]
                        for e in browser.find_elements(By.CSS_SELECTOR, '[id^="parameter-"]') if '/' not in e.get_attribute('id'))
    assert parameters == documented_options(module)
    # "Part of the homelab.postmortem collection" stays on this site.
    collection_link = browser.find_element(By.LINK_TEXT, 'homelab.postmortem collection')
    assert collection_link.get_attribute('href').endswith('/collections/homelab/postmortem/index.html')
