"""The wall page (examples/dashboard/index.html) in Debian's Chromium for the broker matrix: run
with .test-logs/browser-venv's Python (Selenium; Tests/extra/browser installs it). Opens URL,
waits up to TIMEOUT s for the page to show the timer (its digits and phase), prints one JSON
line: {"digits", "phase", "node_online", "via_list"}, or {"error"}.

  python page_check.py URL TIMEOUT"""
import json
import os
import shutil
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

url, timeout = sys.argv[1], float(sys.argv[2])
os.environ["SE_OFFLINE"] = "true"  # never fetch a driver or a browser
opts = webdriver.ChromeOptions()
opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,800", "--no-first-run"]:
    opts.add_argument(a)
d = webdriver.Chrome(options=opts, service=Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver"))
try:
    d.get(url)
    end, r = time.time() + timeout, None
    while time.time() < end:
        r = d.execute_script("""
          const a = window.pacerDashboard && window.pacerDashboard.app;
          if (!a) return null;
          const st = [...a.timers.values()][0];
          return {digits: document.getElementById('digits').textContent, phase: document.body.dataset.phase,
                  node_online: a.nodeOnline, via_list: !!(st && st.from_list), timers: a.timers.size, offset: a.offset};""")
        if r and r["timers"] and r["offset"] is not None and r["phase"] not in (None, "", "syncing", "offline"):
            break
        time.sleep(0.3)
    print(json.dumps(r if r else {"error": "the page never started"}), flush=True)
finally:
    d.quit()
