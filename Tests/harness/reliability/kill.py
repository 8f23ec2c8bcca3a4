"""The kill scenario: SIGKILL N times mid-workout. It does not duplicate the crash test of the
Swift suite: it runs Tests/PacerNodeLiveTests/Durability/CrashRestartTests.swift (the test bundle beside the
pacer binary, else `swift test --skip-build`) with the count asked for (--kills), and reads the
counts out of its summary line."""
import json
import os
import re
import subprocess
import time

from .common import ROOT


def scenario_kill(suite):
    n = suite.args.kills
    suite.say(f"kill: SIGKILL {n} times mid-workout (Tests/PacerNodeLiveTests/Durability/CrashRestartTests.swift)")
    env = dict(os.environ, PACER_CRASH_ITERATIONS=str(n))
    env["PACER_EXECUTABLE"] = suite.pacer
    if suite.args.seed is not None:
        env["PACER_CRASH_SEED"] = str(suite.args.seed)
    log_path = os.path.join(suite.dir("kill"), "swift-test.log")
    t0 = time.monotonic()
    # The test bundle beside the pacer binary, run directly: `swift test` would wait on the
    # build directory's lock while any other SwiftPM command runs in this checkout.
    bundle = os.path.join(os.path.dirname(os.path.abspath(suite.pacer)), "pacerPackageTests.xctest")
    if os.access(bundle, os.X_OK):
        command = [bundle, "--testing-library", "swift-testing", "--filter", "CrashRestartTests"]
    else:
        command = ["swift", "test", "--skip-build", "--filter", "CrashRestartTests"]
    with open(log_path, "w") as log:
        rc = subprocess.call(command, cwd=ROOT,
                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    text = open(log_path, errors="replace").read()
    stats = [line.strip() for line in text.splitlines() if "CrashRestartTests: seed" in line and "kills mid-workout" in line]
    fig = {"kills": n, "exit_status": rc, "seconds": round(time.monotonic() - t0), "result": stats[-1] if stats else None, "log": log_path}
    # Pull the counts out of the summary line.
    if stats:
        line = stats[-1]
        for key, pattern in [("kills_mid_workout", r"(\d+) kills mid-workout"), ("kills_during_startup", r"(\d+) during start-up"),
                             ("commands", r"; (\d+) commands"), ("accepted", r"(\d+) accepted"),
                             ("finished_expired_events", r"(\d+) finished/expired events"),
                             ("republished_in_documented_window", r"\((\d+) published again"), ("problems", r"(\d+) problems")]:
            m = re.search(pattern, line)
            if m:
                fig[key] = int(m.group(1))
    suite.figures["kill"] = fig
    suite.say(f"  {json.dumps(fig)}")
    suite.check("kill", rc == 0 and stats, f"CrashRestartTests failed (exit {rc}); see {log_path}")
