"""The front desk in Chromium for Tests/harness/bench/rooms.py (run with .test-logs/browser-venv's
Python, which has Selenium): opens URL, waits until it shows ROOMS rooms and ROWS timer rows with
every room's clock synced, prints `ready`, then measures SECONDS: the interval between animation
frames (requestAnimationFrame), long tasks (PerformanceObserver), the page's own work
(window.pacerDesk.stats: performance.now() around each message handler and each frame's
rendering), and the renderer main thread's busy time by kind (the DevTools Protocol's
Performance.getMetrics: tasks, script, layout, style); prints one JSON line and saves a
screenshot to SHOT.

  python rooms_page.py URL ROOMS ROWS SECONDS SHOT"""
import json
import os
import shutil
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

def browser_cpu(root_pid):
    """CPU seconds used so far by chromedriver and every Chromium process under it (/proc):
    what the page costs whatever else the machine runs, unlike the durations above."""
    tick = os.sysconf("SC_CLK_TCK")
    pairs = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                pairs.append((int(pid), int(fields[1]), (int(fields[11]) + int(fields[12])) / tick))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
    tree, grew = {root_pid}, True
    while grew:
        grew = False
        for pid, ppid, _ in pairs:
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return {pid: cpu for pid, _, cpu in pairs if pid in tree}


url, rooms, rows, seconds, shot = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
os.environ["SE_OFFLINE"] = "true"  # Selenium must never fetch a driver or a browser
opts = webdriver.ChromeOptions()
opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1920,1080",
          "--hide-scrollbars", "--disable-background-timer-throttling", "--disable-renderer-backgrounding", "--no-first-run"]:
    opts.add_argument(a)
d = webdriver.Chrome(options=opts, service=Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver"))
try:
    d.get(url)
    end = time.time() + 180
    seen = None
    while time.time() < end:
        seen = d.execute_script("return [document.querySelectorAll('.room[data-synced=\"1\"]').length, document.querySelectorAll('.timer').length]")
        if seen[0] >= rooms and seen[1] >= rows:
            break
        time.sleep(0.5)
    else:
        print(f"not ready: {seen[0]} synced rooms, {seen[1]} rows after 180 s", flush=True)
        sys.exit(1)
    print("ready", flush=True)
    # the renderer's main-thread time by kind (Chrome DevTools Protocol), before and after the window
    d.execute_cdp_cmd("Performance.enable", {})
    metrics = lambda: {m["name"]: m["value"] for m in d.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]}
    m0 = metrics()
    cpu0, t0 = browser_cpu(d.service.process.pid), time.time()
    d.execute_script("""
      window.pacerDesk.stats.maxFlushMs = 0;
      const m = window.__m = {frames: [], long: 0, s0: Object.assign({}, window.pacerDesk.stats), t0: performance.now()};
      try { new PerformanceObserver((l) => { m.long += l.getEntries().length; }).observe({entryTypes: ['longtask']}); } catch (e) {}
      let last = performance.now();
      const f = (t) => { m.frames.push(t - last); last = t; if (!m.stop) requestAnimationFrame(f); };
      requestAnimationFrame(f);""")
    time.sleep(seconds)
    r = d.execute_script("""
      const m = window.__m; m.stop = true;
      const s = window.pacerDesk.stats, f = m.frames.slice(1).sort((a, b) => a - b);
      const q = (p) => f.length ? f[Math.min(f.length - 1, Math.floor(f.length * p))] : 0;
      const flushes = s.flushes - m.s0.flushes;
      return {seconds: (performance.now() - m.t0) / 1000, frames: f.length, frame_p50: q(0.5), frame_p99: q(0.99), frame_max: f.length ? f[f.length - 1] : 0,
              long_tasks: m.long, flushes, flush_mean: flushes ? (s.flushMs - m.s0.flushMs) / flushes : 0, flush_max: s.maxFlushMs,
              messages: s.messages - m.s0.messages, handle_ms: s.handleMs - m.s0.handleMs, flip_writes: s.flipWrites - m.s0.flipWrites,
              rooms: document.querySelectorAll('.room').length, rows: document.querySelectorAll('.timer').length};""")
    m1 = metrics()
    cpu1 = browser_cpu(d.service.process.pid)
    r["browser_cpu_percent"] = 100 * sum(cpu1[p] - cpu0[p] for p in cpu1.keys() & cpu0.keys()) / (time.time() - t0)
    for k in ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration"):
        r[k] = (m1.get(k, 0) - m0.get(k, 0)) / r["seconds"]  # seconds per second: the share of the main thread
    d.save_screenshot(shot)
    print(json.dumps(r), flush=True)
finally:
    d.quit()
