"""The HTML report of real runs: its content, that it is self-contained, and that headless
Chromium (driven over the DevTools protocol on a pipe) shows it with no console error, no
network request and every plot visible; a screenshot goes to test-artifacts/."""
from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mpiscope.store.runs import RECORDS, Run


REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts"


class Page(HTMLParser):
    """Tags, attributes and section ids of a page."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def all(self, tag: str) -> list[dict]:
        return [a for t, a in self.tags if t == tag]


@pytest.fixture(scope="module")
def runs(cli, tmp_path_factory) -> dict[str, Run]:
    """A pair run as `mpiscope run` leaves it (report included), and a collective run whose
    1-byte float reductions are skipped and whose points cannot converge (a CI target of 0.01 %)."""
    d = tmp_path_factory.mktemp("sweep")
    out = {}
    for name, args in (("p2p", ["-b", "pingpong,bw", "--sizes", "1:16K"]),
                       # six samples a point cannot meet the target: points that do not converge (a
                       # target below the clock's tick alone stops at timer_resolution, converged)
                       ("coll", ["-b", "allreduce,bcast", "-n", "2", "--sizes", "1:256:*4",
                                 "--ci-target", "0.0001", "--engine-args", "--min-reps 4 --max-reps 6",
                                 "--no-report"])):
        r = cli("run", "--runs-dir", str(d / "runs"), "--max-time", "0.05", "--no-progress", *args)
        assert r.returncode == 0, r.stderr
        out[name] = Run(Path(re.search(r"saved in (\S+)", r.stdout).group(1)))
        out[name + "_stdout"] = r.stdout
    return out


def test_run_writes_report_and_prints_its_path(runs):
    report = runs["p2p"].path / "report.html"
    assert f"report: {report}" in runs["p2p_stdout"]
    assert report.is_file()
    assert not (runs["coll"].path / "report.html").exists()  # --no-report


def test_report_is_self_contained_and_complete(runs):
    text = (runs["p2p"].path / "report.html").read_text()
    page = Page(text)
    assert [a["id"] for a in page.all("section")] == ["summary", "warnings", "setup", "models", "plots",
                                                      "tables", "provenance"]
    assert not page.all("script") and not page.all("link") and not page.all("iframe")
    assert "@import" not in text and "url(" not in text.replace("data:", "")
    for attrs in page.all("img"):
        assert attrs["src"].startswith("data:image/svg+xml;base64,")
        assert b"<svg" in base64.b64decode(attrs["src"].split(",", 1)[1])
    assert len(page.all("img")) == 2  # latency and bandwidth
    meta = runs["p2p"].meta()
    assert "MPICH Version:" in text and meta.launcher_command[0] in text
    assert "Hockney" in text and "regime 1" in text
    assert re.search(r"pingpong latency at 1 B", text) and "peak bandwidth" in text


def test_report_of_a_sweep_directory_tells_runs_apart_and_warns(cli, runs, tmp_path):
    sweep = tmp_path / "sweep"
    for name in ("p2p", "coll"):
        shutil.copytree(runs[name].path, sweep / runs[name].id)
    with open(sweep / runs["coll"].id / RECORDS, "a") as f:
        f.write("{not json\n")
    r = cli("report", str(sweep), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    warnings = text[text.index('id="warnings"'):text.index('id="models"')]
    assert "did not converge" in warnings and "allreduce on 2 ranks at" in warnings
    assert "skipped (" in warnings and "1 B" in warnings
    assert "is corrupt and was skipped" in warnings
    assert runs["coll"].id in warnings and runs["p2p"].id in text
    # side-by-side tables only where two configurations share a benchmark; here none do
    assert "allreduce <span class=muted>on 2 ranks</span>" in text
    assert Page(text).all("details")  # one provenance block per run


def test_report_bad_input_is_one_line(cli_offline, tmp_path):
    r = cli_offline("report", "nothing-here", "--runs-dir", str(tmp_path), "-o", str(tmp_path / "x.html"))
    assert r.returncode == 2 and r.stderr.startswith("mpiscope: error: ") and "Traceback" not in r.stderr
    r = cli_offline("report", str(tmp_path), "-o", str(tmp_path / "x.html"))
    assert r.returncode == 2 and "holds no runs" in r.stderr


# --- headless Chromium over the DevTools protocol (--remote-debugging-pipe: fd 3 in, fd 4 out) ---

@pytest.fixture(scope="session")
def chromium() -> str:
    """Headless Chromium's executable (the browser lane)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is not installed: `apt-get install -y chromium` (.ci/run installs it)")
    return exe


class DevTools:
    def __init__(self, exe: str, profile: Path):
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()
        # the child must see them as fds 3 and 4: park them above 10 first so dup2 cannot clobber
        hi_r, hi_w = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10), fcntl.fcntl(res_w, fcntl.F_DUPFD, 10)
        os.close(cmd_r)
        os.close(res_w)

        def wire() -> None:
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "--window-size=1280,900"],
            pass_fds=(3, 4), preexec_fn=wire,  # the fds are closed after preexec_fn, except these stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(hi_r)
        os.close(hi_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        self.session: str | None = None

    def send(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        return self._until(lambda m: m.get("id") == self._id, timeout).get("result", {})

    def wait_event(self, method: str, timeout: float = 30) -> dict:
        seen = next((e for e in self.events if e.get("method") == method), None)
        return seen or self._until(lambda m: m.get("method") == method, timeout)

    def _until(self, match, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                m = json.loads(raw)
                if "error" in m:
                    raise RuntimeError(f"DevTools: {m['error']}")
                if "method" in m:
                    self.events.append(m)
                if match(m):
                    return m
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._res_r], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer over the DevTools pipe")
            chunk = os.read(self._res_r, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buf += chunk

    def close(self) -> None:
        try:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._res_r)


def test_chromium_shows_the_report_offline_without_errors(runs, chromium, tmp_path):
    report = runs["p2p"].path / "report.html"
    url = report.resolve().as_uri()
    browser = DevTools(chromium, tmp_path / "profile")
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        browser.session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.send(f"{domain}.enable")
        browser.send("Page.navigate", {"url": url})
        browser.wait_event("Page.loadEventFired")
        sizes = browser.send("Runtime.evaluate", {"returnByValue": True, "expression": """
            Array.from(document.images).map(i => {
              const r = i.getBoundingClientRect();
              return [i.complete, i.naturalWidth, r.width, r.height];
            })"""})["result"]["value"]
        height = browser.send("Runtime.evaluate", {"returnByValue": True,
                                                   "expression": "document.documentElement.scrollHeight"})
        height = int(height["result"]["value"])
        browser.send("Emulation.setDeviceMetricsOverride",
                     {"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": False})
        shot = browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
    finally:
        browser.close()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "report.png").write_bytes(base64.b64decode(shot["data"]))

    errors = [e for e in browser.events
              if e["method"] == "Runtime.exceptionThrown"
              or (e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
              or (e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    assert errors == []
    requests = [e["params"]["request"]["url"] for e in browser.events if e["method"] == "Network.requestWillBeSent"]
    assert url in requests  # the report itself: the network domain saw the page load
    assert [u for u in requests if u != url and not u.startswith("data:")] == []
    assert len(sizes) == 2
    for complete, natural, width, height_px in sizes:
        assert complete and natural > 0 and width > 200 and height_px > 100
