#!/usr/bin/env python3
"""Browser tests of shoal-flights (tests/flights.cmake): the page in headless Chromium against 2 ranks.

  --mode browser    drag the two boxes, then check that the edges the page draws are exactly the flights that the
                    generated schedule (dumped by the same binary, filtered here in Python) has in the air at the
                    frozen simulated time from the green box to the red one; saves a screenshot (--screenshot).
  --mode malformed  sends bad messages on a WebSocket (bad JSON, wrong types, boxes out of range, a flood) and checks
                    that each gets an error message and that the server keeps answering queries and pages.
Exit 77 (skipped) only when Selenium, Chromium or chromedriver is not installed.
"""
import argparse
import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SKIP = 77
START = "1:09:30"          # simulated time the frozen clock shows (day 1, 09:30)
START_SECONDS = 86400 + 9 * 3600 + 30 * 60
SCHEDULE = ["--days", "2", "--flights-per-day", "8000", "--seed", "7"]


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def browser_or_skip():
    try:
        from selenium import webdriver  # noqa: F401
    except ImportError:
        print("SKIP: python3-selenium is not installed (apt-get install python3-selenium chromium chromium-driver)")
        sys.exit(SKIP)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
    if not chromium or not driver:
        print("SKIP: no Chromium or chromedriver on PATH (apt-get install chromium chromium-driver)")
        sys.exit(SKIP)
    return chromium, driver


class Server:
    """shoal-flights at 2 ranks under the build's mpiexec, with a frozen clock, on a free port."""

    def __init__(self, args, workdir):
        cmd = [args.mpiexec, "-n", "2", args.binary, "--port", "0", "--start", START, "--speedup", "0",
               "--exit-after", "110"] + SCHEDULE
        self.log = []
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True, cwd=workdir)
        self.port = None
        found = threading.Event()

        def reader():
            for line in self.proc.stdout:
                self.log.append(line.rstrip())
                m = re.search(r"serving http://127\.0\.0\.1:(\d+)/", line)
                if m:
                    self.port = int(m.group(1))
                    found.set()
            found.set()

        threading.Thread(target=reader, daemon=True).start()
        if not found.wait(60) or self.port is None:
            self.stop()
            fail("shoal-flights did not print its URL within 60 s; output:\n" + "\n".join(self.log))
        self.url = "http://127.0.0.1:%d/" % self.port

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


def open_browser(chromium, driver_path, workdir):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--window-size=1400,860", "--user-data-dir=" + os.path.join(workdir, "chrome")]:
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(driver_path), options=opts)


def wait_for(driver, script, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = driver.execute_script(script)
        if v:
            return v
        time.sleep(0.1)
    fail("timed out waiting for " + what)


def load_schedule(args, workdir):
    path = os.path.join(workdir, "schedule.csv")
    r = subprocess.run([args.mpiexec, "-n", "1", args.binary, "--dump-schedule", path] + SCHEDULE,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("--dump-schedule failed: " + r.stdout + r.stderr)
    with open(path) as f:
        return list(csv.DictReader(f))


def predicted(schedule, t, dep, arr):
    """Flights in the air at t from box dep to box arr ([west, south, east, north] in degrees, on the key's grid)."""
    c = lambda v: int(round(v * 100))
    inside = lambda lon, lat, b: c(b[0]) <= lon <= c(b[2]) and c(b[1]) <= lat <= c(b[3])
    return sorted(int(f["id"]) for f in schedule
                  if int(f["dep"]) <= t < int(f["arr"])
                  and inside(int(f["dep_lon_centi"]), int(f["dep_lat_centi"]), dep)
                  and inside(int(f["arr_lon_centi"]), int(f["arr_lat_centi"]), arr))


def drawn_ids(driver):
    return sorted(int(x) for x in driver.execute_script(
        "return Array.from(document.querySelectorAll('#edges line.edge')).map(e => e.dataset.id)"))


def settled_result(driver):
    """Waits until the page has drawn the answer to its latest query; returns it."""
    return wait_for(driver, "const v = window.flightsView; return v.lastResult && v.lastQuery && "
                            "v.lastResult.id === v.lastQuery.id ? v.lastResult : null", "the answer to the last query")


def browser_test(args, chromium, driver_path, workdir):
    schedule = load_schedule(args, workdir)
    server = Server(args, workdir)
    driver = open_browser(chromium, driver_path, workdir)
    try:
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By
        driver.get(server.url)
        settled_result(driver)
        # Drag the green box 4 degrees east (it starts at [-80, 38, -70, 44]); grow the red box by dragging its corner.
        kx = driver.execute_script("const r = document.getElementById('svg').getScreenCTM(); return [r.a, r.d];")
        px_per_deg_x, px_per_deg_y = 10 * 0.766 * kx[0], 10 * kx[1]
        ActionChains(driver).drag_and_drop_by_offset(driver.find_element(By.ID, "dep-box"),
                                                     int(-6 * px_per_deg_x), int(2 * px_per_deg_y)).perform()
        first = settled_result(driver)
        ActionChains(driver).drag_and_drop_by_offset(driver.find_element(By.ID, "arr-handle"),
                                                     int(12 * px_per_deg_x), int(4 * px_per_deg_y)).perform()
        deadline = time.time() + 30
        while True:
            result = settled_result(driver)
            if result["id"] > first["id"]:
                break
            if time.time() > deadline:
                fail("no query after resizing the red box")
            time.sleep(0.1)
        time.sleep(1.5)  # a live re-run or two: the frozen clock must give the same edges
        result = settled_result(driver)
        boxes = result["boxes"]
        if boxes["dep"][0] > -80.5 or boxes["arr"][2] < -110:
            fail("the drags did not move the boxes as expected: %s" % boxes)
        if result["sim_time"] != START_SECONDS:
            fail("simulated time %s, expected the frozen %d" % (result["sim_time"], START_SECONDS))
        want = predicted(schedule, START_SECONDS, boxes["dep"], boxes["arr"])
        got = drawn_ids(driver)
        print("boxes %s: %d flights predicted, %d edges drawn" % (boxes, len(want), len(got)))
        if len(want) < 5:
            fail("the test's boxes match too few flights (%d) to mean anything" % len(want))
        if got != want:
            fail("drawn edges differ from the schedule: missing %s, extra %s" %
                 (sorted(set(want) - set(got))[:20], sorted(set(got) - set(want))[:20]))
        clock = driver.find_element(By.ID, "clock").text
        if clock != "day 1, 09:30":
            fail("the page shows the clock '%s', expected 'day 1, 09:30'" % clock)
        if args.screenshot:
            driver.save_screenshot(args.screenshot)
            print("screenshot: " + args.screenshot)
    finally:
        driver.quit()
        server.stop()
    print("PASS: %d edges equal the schedule's flights at day 1, 09:30" % len(want))


MALFORMED = r"""
const done = arguments[arguments.length - 1];
const url = arguments[0];
const bad = [
  'not json at all', '[1, 2, 3]', '{"type": 5}', '{"type": "fly"}',
  '{"type": "query", "dep": [1, 2, 3], "arr": [0, 0, 1, 1]}',
  '{"type": "query", "dep": [-200, 30, -70, 40], "arr": [-120, 30, -110, 40]}',
  '{"type": "query", "dep": [-70, 30, -80, 40], "arr": [-120, 30, -110, 40]}',
  '{"type": "query", "dep": [-80, 30, -70, 40], "arr": [-120, 30, -110, "x"]}',
  '{"type": "query", "dep": [-80, 30, -70, 40], "arr": [-120, 30, -110, 40], "every_ms": 5}',
  '{"type": "query", "id": 1, "pad": "' + 'x'.repeat(8000) + '", "dep": [-80, 30, -70, 40], "arr": [-120, 30, -110, 40]}',
];
const good = '{"type": "query", "id": 99, "dep": [-130, 10, -50, 75], "arr": [-130, 10, -50, 75]}';
const got = [];
const ws = new WebSocket(url);
ws.onmessage = ev => got.push(JSON.parse(ev.data));
ws.onerror = () => done({ error: 'websocket error', got });
ws.onopen = async () => {
  for (const m of bad) ws.send(m);
  await new Promise(r => setTimeout(r, 500));
  const errorsBefore = got.filter(m => m.type === 'error').length;
  for (let i = 0; i < 40; i++) ws.send(good);        // a flood: past the per-connection rate
  await new Promise(r => setTimeout(r, 2500));        // the rate limiter refills
  const marker = got.length;
  ws.send(good.replace('"id": 99', '"id": 100'));
  const t0 = Date.now();
  while (!got.slice(marker).some(m => m.type === 'result' && m.id === 100) && Date.now() - t0 < 10000)
    await new Promise(r => setTimeout(r, 50));
  // A message above the WebSocket frame limit closes this connection only.
  const huge = new WebSocket(url);
  const hugeClosed = await new Promise(r => { huge.onopen = () => huge.send('x'.repeat(100000)); huge.onclose = () => r(true);
                                              setTimeout(() => r(false), 10000); });
  done({ got, errorsBefore, hugeClosed });
};
"""


def malformed_test(args, chromium, driver_path, workdir):
    server = Server(args, workdir)
    driver = open_browser(chromium, driver_path, workdir)
    try:
        driver.set_script_timeout(60)
        driver.get(server.url)
        settled_result(driver)
        out = driver.execute_async_script(MALFORMED, "ws://127.0.0.1:%d/ws" % server.port)
        if "error" in out:
            fail(out["error"])
        errors = [m["message"] for m in out["got"] if m["type"] == "error"]
        for e in errors[:12]:
            print("error reply: " + e)
        if out["errorsBefore"] != 10:
            fail("expected one error reply for each of the 10 malformed messages, got %d" % out["errorsBefore"])
        for needle in ["malformed JSON", "\"type\"", "unknown message type", "array [west, south, east, north]",
                       "out of range", "is empty", "must be a number", "every_ms", "message too long"]:
            if not any(needle in e for e in errors):
                fail("no error reply mentions '%s'" % needle)
        if not any("too many queries" in e for e in errors):
            fail("the flood of 40 queries got no 'too many queries' error")
        if not any(m["type"] == "result" and m["id"] == 100 for m in out["got"]):
            fail("the valid query after the bad input got no result")
        if not out["hugeClosed"]:
            fail("a 100 kB message did not close its connection")
        # The server still serves: the page over HTTP and the page's own live query.
        with urllib.request.urlopen(server.url, timeout=10) as r:
            if r.status != 200 or b"shoal-flights" not in r.read():
                fail("the page is no longer served")
        before = driver.execute_script("return window.flightsView.results")
        wait_for(driver, "return window.flightsView.results > %d" % before, "the page's live updates to go on")
        if not server.alive():
            fail("shoal-flights exited")
    finally:
        driver.quit()
        server.stop()
    print("PASS: %d error replies, the server kept serving" % len(errors))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["browser", "malformed"], required=True)
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--binary", required=True)
    p.add_argument("--screenshot")
    args = p.parse_args()
    args.binary = os.path.abspath(args.binary)
    chromium, driver_path = browser_or_skip()
    with tempfile.TemporaryDirectory(prefix="shoal-flights-") as workdir:
        (browser_test if args.mode == "browser" else malformed_test)(args, chromium, driver_path, workdir)


if __name__ == "__main__":
    main()
