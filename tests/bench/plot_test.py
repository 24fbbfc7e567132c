"""benchresult --plot end to end: runs the benchresult binary on the result files in testdata and
reads the chart it writes.

    plot_test.py BENCHRESULT TESTDATA_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

BENCHRESULT = ""
TESTDATA = ""


def run_benchresult(*args):
    return subprocess.run([BENCHRESULT, *args], capture_output=True, text=True, check=False)


class PlotTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rill_plot_test")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def plot(self, out_name, *files):
        out = os.path.join(self.dir, out_name)
        r = run_benchresult("--plot", out, *files)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        with open(out, "rb") as f:
            return f.read()

    def texts(self, svg):
        root = ET.fromstring(svg)  # Also checks that the SVG is well-formed XML.
        self.assertEqual(root.tag, "{http://www.w3.org/2000/svg}svg")
        return ["".join(t.itertext()).strip() for t in root.iter("{http://www.w3.org/2000/svg}text")]

    def test_one_row_per_run_one_colour_per_file(self):
        svg = self.plot("plot.svg", os.path.join(TESTDATA, "old.json"),
                        os.path.join(TESTDATA, "new.json"))
        texts = self.texts(svg)
        # Legend: the files and the percentile glyphs.
        for t in ("old.json", "new.json", "p50", "p90", "p99 (line spans p50 to p99)"):
            self.assertIn(t, texts)
        # Rows, in order of first appearance, named by run mode and the one feature that varies.
        rows = [t for t in texts if "MaxConcurrentCalls=" in t]
        self.assertEqual(rows, ["unary MaxConcurrentCalls=1", "unary MaxConcurrentCalls=8",
                                "unconstrained MaxConcurrentCalls=1",
                                "streaming MaxConcurrentCalls=1"])
        self.assertFalse([t for t in texts if "NetworkMode" in t])
        # Runs missing from a file, and the unconstrained run without latencies.
        self.assertIn("new.json: no such run", texts)
        self.assertIn("old.json: no such run", texts)
        self.assertIn("old.json: no latencies (unconstrained)", texts)
        # Operations per second of every run: TotalOps (or the mean of SendOps and RecvOps of
        # the unconstrained run) over BenchTime (1 s).
        for t in ("24.5k", "98.1k", "1.15M", "104k", "26k", "51k"):
            self.assertIn(t, texts)
        # Axes: Go durations and rates on whole decades.
        for t in ("10µs", "100µs", "1ms", "10ms", "10k", "100k", "1M", "10M"):
            self.assertIn(t, texts)

    def test_files_of_the_earlier_writer_plot_the_same(self):
        # Same file name for both, so that the legends match too.
        earlier = os.path.join(self.dir, "earlier")
        current = os.path.join(self.dir, "current")
        os.mkdir(earlier)
        os.mkdir(current)
        shutil.copy(os.path.join(TESTDATA, "old_writer_format.json"),
                    os.path.join(earlier, "r.json"))
        shutil.copy(os.path.join(TESTDATA, "old.json"), os.path.join(current, "r.json"))
        self.assertEqual(self.plot("a.svg", os.path.join(earlier, "r.json")),
                         self.plot("b.svg", os.path.join(current, "r.json")))

    def test_svg_is_reproducible(self):
        old = os.path.join(TESTDATA, "old.json")
        self.assertEqual(self.plot("a.svg", old), self.plot("b.svg", old))

    def test_png(self):
        png = self.plot("plot.png", os.path.join(TESTDATA, "new.json"))
        self.assertTrue(png.startswith(b"\x89PNG\r\n\x1a\n"))

    def test_bad_input_fails_without_a_chart(self):
        out = os.path.join(self.dir, "bad.svg")
        for bad in (os.path.join(TESTDATA, "old_table.txt"),
                    os.path.join(TESTDATA, "no-such-file.json")):
            r = run_benchresult("--plot", out, bad)
            self.assertNotEqual(r.returncode, 0)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    BENCHRESULT, TESTDATA = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
