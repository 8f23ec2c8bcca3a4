"""Renders the dashboard's PNG icons from its SVGs with the local Chromium (no downloads).

    .test-logs/browser-venv/bin/python Tests/extra/browser.d/make_icons.py

writes examples/dashboard/icon-192.png, icon-512.png (from icon.svg, transparent corners) and
icon-maskable-512.png (from icon-maskable.svg, full bleed). The browser suite checks that
they exist with these sizes; run this again after changing an SVG.
"""
import base64
import os
import shutil

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DASH = os.path.join(ROOT, "examples", "dashboard")
ICONS = [("icon.svg", "icon-192.png", 192), ("icon.svg", "icon-512.png", 512), ("icon-maskable.svg", "icon-maskable-512.png", 512)]


def main():
    os.environ["SE_OFFLINE"] = "true"
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"]:
        opts.add_argument(a)
    d = webdriver.Chrome(options=opts, service=Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver"))
    try:
        d.execute_cdp_cmd("Emulation.setDefaultBackgroundColorOverride", {"color": {"r": 0, "g": 0, "b": 0, "a": 0}})
        for svg, png, size in ICONS:
            data = base64.b64encode(open(os.path.join(DASH, svg), "rb").read()).decode()
            html = ('<html><body style="margin:0;background:transparent">'
                    '<img src="data:image/svg+xml;base64,%s" width="%d" height="%d" style="display:block"></body></html>' % (data, size, size))
            d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": size, "height": size, "deviceScaleFactor": 1, "mobile": False})
            d.get("data:text/html;base64," + base64.b64encode(html.encode()).decode())
            d.execute_script("return new Promise(r => { const i = document.images[0]; i.complete ? r() : i.onload = r; })")
            shot = d.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "clip": {"x": 0, "y": 0, "width": size, "height": size, "scale": 1}})
            with open(os.path.join(DASH, png), "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            print("wrote", os.path.relpath(os.path.join(DASH, png), ROOT), "%dx%d" % (size, size))
    finally:
        d.quit()


if __name__ == "__main__":
    main()
