"""The HTML report in a real browser: headless Chromium loads it without console errors, its
script runs, its timeline has one row per device, and a screenshot is kept as an artefact."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

TANDEM = ""
ZOO = ""
EXAMPLES = ""
ARTEFACTS = ""
SKIPPED = 77  # ctest's SKIP_RETURN_CODE for this test


def run(*args, timeout=120):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def chromium(*args):
    return run(shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
               "--enable-logging=stderr", "--v=0", *args, timeout=90)


class HtmlReport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        plan = os.path.join(cls.dir.name, "plan.json")
        cluster = os.path.join(EXAMPLES, "h100-4xv5e.yaml")
        model = os.path.join(ZOO, "resnet", "model.onnx")
        result = run(TANDEM, "plan", model, "--cluster", cluster, "--strategy", "pipeline",
                     "--objective", "throughput", "--microbatches", "4", "-o", plan)
        assert result.returncode == 0, result.stderr
        with open(plan) as f:
            cls.devices = [device["id"] for device in json.load(f)["devices"]]
        cls.report = os.path.join(cls.dir.name, "report.html")
        result = run(TANDEM, "simulate", plan, "--cluster", cluster, "--model", model,
                     "--report", cls.report)
        assert result.returncode == 0, result.stderr
        cls.dom = chromium("--dump-dom", "file://" + cls.report)

    def test_self_contained(self):
        with open(self.report) as f:
            html = f.read()
        self.assertNotRegex(html, r"(src|href)=\"(https?:)?//")
        self.assertNotIn("@import", html)

    def test_loads_without_console_errors(self):
        self.assertEqual(self.dom.returncode, 0, self.dom.stderr[-2000:])
        console = [line for line in self.dom.stderr.splitlines()
                   if ":CONSOLE" in line or "Uncaught" in line]
        self.assertEqual(console, [])
        self.assertIn('data-rendered="true"', self.dom.stdout)  # its script ran to the end

    def test_timeline_has_one_row_per_device(self):
        rows = re.findall(r'<g class="row" data-device="([^"]+)"', self.dom.stdout)
        self.assertEqual(rows, self.devices)
        self.assertIn('data-rows="%d"' % len(self.devices), self.dom.stdout)
        self.assertRegex(self.dom.stdout, r'<g class="row" data-link=')
        for section in ("Utilisation", "Memory over time", "Bytes moved between devices"):
            self.assertIn(section, self.dom.stdout)

    def test_screenshot_is_kept(self):
        os.makedirs(ARTEFACTS, exist_ok=True)
        shot = os.path.join(ARTEFACTS, "html_report.png")
        if os.path.exists(shot):
            os.remove(shot)
        result = chromium("--screenshot=" + shot, "--window-size=1400,900",
                          "file://" + self.report)
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        with open(shot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(shot), 10000)  # a page, not a blank one


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--zoo", required=True)
    parser.add_argument("--examples", required=True)
    parser.add_argument("--artefacts", required=True)
    args, rest = parser.parse_known_args()
    TANDEM, ZOO, EXAMPLES, ARTEFACTS = args.tandem, args.zoo, args.examples, args.artefacts
    if not shutil.which("chromium"):
        print("SKIPPED: no `chromium` on PATH (scripts/setup.sh installs Debian's chromium)")
        sys.exit(SKIPPED)
    unittest.main(argv=[sys.argv[0], *rest])
