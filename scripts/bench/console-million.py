#!/usr/bin/env python3
"""Benchmark: the console's Data view on a node with 1,000,000 children, in headless Chromium.

    python3 scripts/bench/console-million.py [--bin .build/release/hearth] [--children 1000000] [--rounds 3]

Starts `hearth serve` (default mode, a fresh data folder, a free port), seeds /million with the
children (PATCHes of 250,000), signs the console in and measures, per round (each in a new window):

  open        Go to /million until its first row is on screen (ms), and the child count shown
  heap        the page's JS heap after opening, and after scrolling (performance.memory with
              --enable-precise-memory-info; CDP Performance.getMetrics JSHeapUsedSize), DOM nodes
  scroll      600 animation frames scrolling 120 px each (like a wheel): frame times (mean, p95,
              max) and how many frames showed rows not yet loaded
  jump        20 jumps to random positions: time until every visible row is loaded (median, max)

Prints one JSON object per round and a Markdown summary (medians over rounds). Needs Chromium and
chromedriver (/usr/bin/chromium, /usr/bin/chromedriver) and `pip install selenium requests`.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import requests
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'Tests', 'Support', 'Python'))
from chromium import Chromium  # noqa: E402

SECRET = 'bench-console-secret'


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def start_server(binary, folder):
    port = free_port()
    env = dict(os.environ, HEARTH_ADMIN_SECRET=SECRET)
    log = open(os.path.join(folder, 'server.log'), 'wb')
    process = subprocess.Popen([binary, 'serve', '--host', '127.0.0.1', '--port', str(port), '--data', os.path.join(folder, 'data')],
                               stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    url = f'http://127.0.0.1:{port}'
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if requests.get(url + '/', timeout=2).status_code == 200:
                return process, url
        except requests.RequestException:
            time.sleep(0.1)
    process.kill()
    sys.exit('hearth did not start; see ' + folder)


def seed(url, children):
    started = time.time()
    step = 250_000
    for first in range(0, children, step):
        body = '{' + ','.join(f'"k{i:07d}":{i}' for i in range(first, min(children, first + step))) + '}'
        reply = requests.patch(f'{url}/million.json?print=silent', data=body, headers={'Authorization': f'Bearer {SECRET}'}, timeout=600)
        reply.raise_for_status()
    return time.time() - started


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get('CHROMIUM', '/usr/bin/chromium')
    for arg in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--window-size=1280,860',
                '--enable-precise-memory-info', '--disable-background-timer-throttling', '--disable-renderer-backgrounding'):
        options.add_argument(arg)
    driver = Chromium(os.environ.get('CHROMEDRIVER', '/usr/bin/chromedriver'), options)
    driver.set_script_timeout(300)
    return driver


def metrics(driver):
    driver.execute_cdp_cmd('HeapProfiler.collectGarbage', {})
    values = {m['name']: m['value'] for m in driver.execute_cdp_cmd('Performance.getMetrics', {})['metrics']}
    return {'js_heap_used_mb': round(values['JSHeapUsedSize'] / 1048576, 1), 'dom_nodes': int(values['Nodes']),
            'performance_memory_mb': round(driver.execute_script('return performance.memory.usedJSHeapSize') / 1048576, 1)}


def one_round(driver, url, children):
    driver.switch_to.new_window('window')
    driver.execute_cdp_cmd('Performance.enable', {})
    driver.get(url + '/console/')
    field = WebDriverWait(driver, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, '#sign-in input[name=secret]'))
    field.send_keys(SECRET + '\n')
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, 'console-view').is_displayed())
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, 'tree-count').text not in ('', 'Loading…'))
    before = metrics(driver)
    open_ms = driver.execute_async_script('''
        const done = arguments[arguments.length - 1];
        document.getElementById('goto-path').value = '/million';
        const started = performance.now();
        document.getElementById('goto').requestSubmit();
        const check = () => {
            const first = document.querySelector('#tree .node-row .key');
            if (first && first.textContent === 'k0000000') done(performance.now() - started); else requestAnimationFrame(check);
        };
        check();''')
    count = WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, 'tree-count').text if 'children' in d.find_element(By.ID, 'tree-count').text else None)
    opened = metrics(driver)
    scroll = driver.execute_async_script('''
        const done = arguments[arguments.length - 1];
        const s = document.getElementById('tree-scroller');
        s.scrollTop = (s.scrollHeight - s.clientHeight) / 3;
        const frames = []; let blanks = 0; let last = performance.now(); let n = 0;
        const step = () => {
            const now = performance.now(); frames.push(now - last); last = now;
            if (document.querySelector('#tree .node-row.loading')) blanks++;
            if (++n > 600) { frames.shift(); done({frames, blanks}); return; }
            s.scrollTop += 120;
            requestAnimationFrame(step);
        };
        requestAnimationFrame(step);''')
    frames = sorted(scroll['frames'])
    jumps = driver.execute_async_script('''
        const done = arguments[arguments.length - 1];
        const count = arguments[0];
        const s = document.getElementById('tree-scroller');
        const times = []; let i = 0; let seed = 7;
        const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
        const jump = () => {
            if (i++ >= 20) { done(times); return; }
            s.scrollTop = (s.scrollHeight - s.clientHeight) * random();
            // The first row in view at this scroll position (the scroll bar is scaled past ~470,000 rows).
            const full = count * 32, height = s.scrollHeight, view = s.clientHeight;
            const first = Math.floor(s.scrollTop * (full > height ? (full - view) / (height - view) : 1) / 32);
            const started = performance.now();
            const check = () => {
                const row = document.querySelector(`#tree .node-row[aria-posinset="${first + 1}"]`);
                if (row && row.querySelector('.key') && !document.querySelector('#tree .node-row.loading')) { times.push(performance.now() - started); setTimeout(jump, 50); }
                else requestAnimationFrame(check);
            };
            requestAnimationFrame(check);
        };
        jump();''', children)
    scrolled = metrics(driver)
    driver.close()
    driver.switch_to.window(driver.window_handles[0])
    return {
        'children': children, 'count_shown': count, 'open_ms': round(open_ms),
        'heap_before_mb': before['js_heap_used_mb'], 'heap_opened_mb': opened['js_heap_used_mb'], 'heap_scrolled_mb': scrolled['js_heap_used_mb'],
        'performance_memory_scrolled_mb': scrolled['performance_memory_mb'], 'dom_nodes_opened': opened['dom_nodes'], 'dom_nodes_scrolled': scrolled['dom_nodes'],
        'frame_mean_ms': round(statistics.mean(frames), 1), 'frame_p95_ms': round(frames[int(len(frames) * 0.95)], 1), 'frame_max_ms': round(frames[-1], 1),
        'frames_with_unloaded_rows': scroll['blanks'], 'frames': len(frames),
        'jump_median_ms': round(statistics.median(jumps)), 'jump_max_ms': round(max(jumps)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--bin', default=os.environ.get('HEARTH_BIN', '.build/release/hearth'))
    parser.add_argument('--children', type=int, default=1_000_000)
    parser.add_argument('--rounds', type=int, default=3)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix='hearth-console-bench-')
    process, url = start_server(args.bin, folder)
    driver = None
    try:
        seconds = seed(url, args.children)
        print(f'seeded {args.children:,} children in {seconds:.1f} s', file=sys.stderr)
        driver = browser()
        rounds = []
        for _ in range(args.rounds):
            result = one_round(driver, url, args.children)
            print(json.dumps(result))
            rounds.append(result)
        median = lambda name: statistics.median(r[name] for r in rounds)  # noqa: E731
        print(f'\n| what | median of {len(rounds)} rounds |\n| --- | --- |')
        for name in rounds[0]:
            if isinstance(rounds[0][name], (int, float)) and name != 'children':
                print(f'| {name} | {median(name):g} |')
    finally:
        if driver:
            driver.quit()
        process.terminate()
        process.wait(timeout=20)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == '__main__':
    main()
