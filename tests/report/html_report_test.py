"""The HTML report in a real browser: headless Chromium loads it without console errors, its
script runs, its timeline has one labelled lane per device, a legend and a time axis with its
unit, its memory charts have both axes, no table is empty, its title shows paths relative to
where tandem ran, and a screenshot is kept as an artefact."""
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


def run(*args, timeout=120, cwd=None):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, cwd=cwd)


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
        # A batch of 8 in 4 micro-batches, so that the waves (and their colours) show.
        result = run(TANDEM, "plan", model, "--cluster", cluster, "--strategy", "pipeline",
                     "--objective", "throughput", "--microbatches", "4", "--dim", "batch=8",
                     "-o", plan)
        assert result.returncode == 0, result.stderr
        with open(plan) as f:
            cls.devices = [device["id"] for device in json.load(f)["devices"]]
        cls.report = os.path.join(cls.dir.name, "report.html")
        # Absolute paths, from the repository's root: the title shows them relative to it.
        cls.root = os.path.dirname(os.path.dirname(os.path.abspath(EXAMPLES)))
        result = run(TANDEM, "simulate", plan, "--cluster", cluster, "--model", model,
                     "--dim", "batch=8", "--report", cls.report, cwd=cls.root)
        assert result.returncode == 0, result.stderr
        cls.dom = chromium("--dump-dom", "file://" + cls.report)
        cls.expected_title = "%s/plan.json on %s" % (
            os.path.basename(cls.dir.name), os.path.relpath(cluster, cls.root))

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

    def timeline(self):
        found = re.search(r'<svg class="timeline predicted".*?</svg>', self.dom.stdout, re.S)
        self.assertIsNotNone(found, "no predicted timeline")
        return found.group(0)

    def test_timeline_has_one_labelled_lane_per_device(self):
        rows = re.findall(r'<g class="row" data-device="([^"]+)"', self.dom.stdout)
        self.assertEqual(rows, self.devices)
        self.assertIn('data-rows="%d"' % len(self.devices), self.dom.stdout)
        self.assertRegex(self.dom.stdout, r'<g class="row" data-link=')
        # Every lane carries its name at the left: the device's compute, or the link.
        lanes = re.findall(r'<g class="row" data-(device|link)="([^"]+)"[^>]*>.*?'
                           r'<text class="lane"[^>]*>([^<]+)</text>', self.timeline(), re.S)
        self.assertGreater(len(lanes), len(self.devices))
        for kind, name, label in lanes:
            if kind == "device":
                self.assertEqual(label, name + " compute")
            else:
                self.assertTrue(label.strip(), "a link lane without a label")
        for section in ("Utilisation", "Memory over time", "Bytes moved between devices"):
            self.assertIn(section, self.dom.stdout)

    def test_time_axis_has_unit_and_ticks(self):
        timeline = self.timeline()
        self.assertRegex(timeline, r'class="axis-title"[^>]*>time since the batch started '
                                   r'\((s|ms|\u00b5s|ns)\)</text>')
        ticks = [float(t) for t in re.findall(r'<text class="tick"[^>]*>([0-9.]+)</text>',
                                              timeline)]
        self.assertGreaterEqual(len(ticks), 4)
        self.assertEqual(ticks[0], 0)
        self.assertEqual(ticks, sorted(ticks))

    def test_legend_says_what_each_colour_means(self):
        legend = re.search(r'<div class="legend">(.*?)</div>', self.dom.stdout, re.S)
        self.assertIsNotNone(legend, "no legend")
        keys = re.findall(r'<span class="key"[^>]*>(.*?)</span>', legend.group(1), re.S)
        text = [re.sub(r"<[^>]+>", "", key).strip() for key in keys]
        self.assertTrue(any(t.startswith("compute") for t in text), text)
        self.assertTrue(any(t.startswith("transfer") for t in text), text)
        # The plan runs 4 micro-batches: each has its swatch, in the colours the spans use.
        shades = re.findall(r'<span class="key" data-microbatch="(\d+)">', legend.group(1))
        self.assertEqual(shades, ["0", "1", "2", "3"])
        fills = set(re.findall(r'<rect class="span"[^>]*fill="([^"]+)"', self.timeline()))
        swatches = set(re.findall(r'fill="(hsl[^"]+)"', legend.group(1)))
        self.assertTrue(fills <= swatches, "colours without a key: %s" % (fills - swatches))

    def test_memory_charts_have_both_axes(self):
        charts = re.findall(r'<div class="memory".*?</svg>', self.dom.stdout, re.S)
        self.assertGreater(len(charts), 0)
        for chart in charts:
            self.assertRegex(chart, r'data-axis="bytes"')
            self.assertRegex(chart, r'>in use</text>')
            byte_ticks = re.findall(r'text-anchor="end">([^<]+)</text>', chart)
            self.assertGreaterEqual(len(byte_ticks), 3)
            for tick in byte_ticks[1:]:
                self.assertRegex(tick, r'^[0-9.]+ (B|KiB|MiB|GiB)$')
            self.assertRegex(chart, r'class="axis-title"[^>]*>time \((s|ms|\u00b5s|ns)\)</text>')

    def test_no_empty_table(self):
        tables = re.findall(r"<table.*?</table>", self.dom.stdout, re.S)
        self.assertGreater(len(tables), 0)
        for table in tables:
            self.assertIn("<td", table, "an empty table: " + table[:200])

    def test_title_shows_relative_paths(self):
        heading = re.search(r"<h1[^>]*>([^<]*)</h1>", self.dom.stdout)
        self.assertEqual(heading.group(1), self.expected_title)
        self.assertIn("<title>%s</title>" % self.expected_title, self.dom.stdout)

    def test_strategy_is_among_the_facts(self):
        facts = re.search(r'<table class="facts">(.*?)</table>', self.dom.stdout, re.S)
        self.assertIsNotNone(facts)
        self.assertRegex(facts.group(1), r"<th>strategy</th><td>pipeline")

    def test_screenshot_is_kept(self):
        os.makedirs(ARTEFACTS, exist_ok=True)
        shot = os.path.join(ARTEFACTS, "html_report.png")
        if os.path.exists(shot):
            os.remove(shot)
        result = chromium("--screenshot=" + shot, "--window-size=1400,1900",
                          "file://" + self.report)
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        with open(shot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(shot), 10000)  # a page, not a blank one


class MeasuredRunReport(unittest.TestCase):
    """`tandem run --cluster --report`: the prediction, and below it the run measured here."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.report = os.path.join(cls.dir.name, "run.html")
        result = run(TANDEM, "run", os.path.join(ZOO, "resnet", "model.onnx"), "--dim", "batch=4",
                     "--cluster", os.path.join(EXAMPLES, "cpu-split.yaml"), "--strategy", "pipeline",
                     "--microbatches", "2", "--iterations", "3", "--report", cls.report)
        assert result.returncode == 0, result.stderr
        cls.dom = chromium("--dump-dom", "file://" + cls.report)

    def test_measured_timeline_below_the_predicted_one(self):
        html = self.dom.stdout
        self.assertIn('data-rendered="true"', html)
        predicted, measured = html.find(">predicted<"), html.find('class="measured">measured on this machine<')
        self.assertGreater(predicted, 0)
        self.assertGreater(measured, predicted)
        # A time axis under each timeline (and the memory charts').
        self.assertGreaterEqual(html[predicted:measured].count('data-axis="time"'), 1)
        self.assertGreaterEqual(html[measured:].count('data-axis="time"'), 1)
        self.assertRegex(html, r"Iteration [0-2] of 3 \(the median by wall time")

    def test_measured_busy_beside_predicted(self):
        self.assertEqual(self.dom.stdout.count("<td data-measured-busy"), 2)

    def test_each_segment_measured_beside_predicted_and_the_misses_flagged(self):
        html = self.dom.stdout
        self.assertIn("Segments: measured beside predicted", html)
        table = html[html.find('<table class="segments">'):]
        table = table[:table.find("</table>")]
        rows = re.findall(r"<tr( class=\"off\" data-off(?:=\"\")?)?><td>(\d+)</td><td>(cpu[01])</td>"
                          r"<td>\d+</td><td>[^<]*</td><td>[^<]+</td><td>[^<]+</td><td>([+-]\d+)%", table)
        self.assertGreaterEqual(len(rows), 2, table)  # a pipeline: a segment on each device
        self.assertEqual({device for _, _, device, _ in rows}, {"cpu0", "cpu1"})
        # A row is flagged exactly when its error is beyond 25% (rounded to the percent shown).
        for flag, _, _, error in rows:
            if abs(int(error)) > 26:
                self.assertTrue(flag, table)
            if abs(int(error)) < 24:
                self.assertFalse(flag, table)

    def test_screenshot_is_kept(self):
        os.makedirs(ARTEFACTS, exist_ok=True)
        shot = os.path.join(ARTEFACTS, "run_report.png")
        result = chromium("--screenshot=" + shot, "--window-size=1400,1900", "file://" + self.report)
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertGreater(os.path.getsize(shot), 10000)


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
