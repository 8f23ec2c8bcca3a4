"""The command line of scripts/reliability: its usage text (DESCRIPTION, printed by --help), the
table of scenarios in the order a run takes them, and main(): parses the arguments (the --ci
defaults), runs the chosen scenarios one after another (one that breaks is a failure, the others
still run), writes the JSON report, prints the failures and known issues, and removes the
working directory when nothing failed. `--storm-blast` makes the process the storm's clients."""
import argparse
import json
import os
import random
import shutil
import sys
import time

from . import acl, broker_faults, clock, disk, hostile, kill, storm, stuck
from .common import ROOT
from .suite import Suite

DESCRIPTION = """Pacer's fault suite: real `pacer run` processes, real mosquitto brokers on 127.0.0.1
(free ports, stopped by PID), faults injected from outside (signals, broker restarts, a
stepped wall clock, a full disk, a stuck subscriber, hostile payloads, a command storm).
The node is a black box: only MQTT, files, signals and /proc are used.

    scripts/reliability                      # the default run (about 10 minutes)
    scripts/reliability --ci                 # the reduced run of Tests/extra/reliability (< 3 min;
                                             # seed 1, no kill scenario: the Swift suite runs it)
    scripts/reliability --kills 1000 --restarts 20 --absent 30 --storm-clients 20 --storm-commands 1000
    scripts/reliability --only restart,storm # some scenarios (names: --list)

Every figure is printed and written as JSON to --report (default .test-logs/reliability.json);
the node's and the brokers' logs stay in --workdir (a temporary directory, kept on failure).
Python 3 standard library only: the small MQTT 3.1.1 client is in Tests/harness/reliability/mqtt.py.
Exit status 0 when every check passed, 1 otherwise.
"""

SCENARIOS = {  # in the order of a run
    "restart": broker_faults.scenario_restart,
    "absent": broker_faults.scenario_absent,
    "refused": broker_faults.scenario_refused,
    "acl": acl.scenario_acl,
    "aclnode": acl.scenario_aclnode,
    "kill": kill.scenario_kill,
    "clock": clock.scenario_clock,
    "stuck": stuck.scenario_stuck,
    "disk": disk.scenario_disk,
    "hostile": hostile.scenario_hostile,
    "storm": storm.scenario_storm,
    "stormlimit": storm.scenario_stormlimit,
}


def main():
    p = argparse.ArgumentParser(description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ci", action="store_true", help="the reduced run (Tests/extra/reliability)")
    p.add_argument("--only", help="comma-separated scenarios: " + ",".join(SCENARIOS))
    p.add_argument("--list", action="store_true")
    p.add_argument("--pacer", default=os.environ.get("PACER_BIN"), help="the pacer binary (default: $PACER_BIN, else .build/debug/pacer)")
    p.add_argument("--kills", type=int, help="SIGKILLs of the crash scenario (default 100, CI 50)")
    p.add_argument("--restarts", type=int, help="broker restarts (default 20, CI 5)")
    p.add_argument("--absent", type=int, help="seconds without a broker at start (default 30, CI 8)")
    p.add_argument("--refused-window", type=int, default=None)
    p.add_argument("--stuck-seconds", type=int, default=None)
    p.add_argument("--hostile-rounds", type=int, default=None,
                   help="rounds of the hostile payloads (Tests/harness/reliability/hostile_payloads.py; default 2, CI 1: each case once)")
    p.add_argument("--storm-clients", type=int, default=None)
    p.add_argument("--storm-commands", type=int, default=None)
    p.add_argument("--storm-rate-limit", type=int, default=0,
                   help="limits.command_rate (and command_burst) of the storm scenarios (default: off in storm, 20 in stormlimit)")
    p.add_argument("--reconnect-bound-ms", type=int, default=10000,
                   help="fail when the node reconnects later than this after the broker accepts again (default 10000; the target is 1000)")
    p.add_argument("--strict", action="store_true", help="known issues fail the run too")
    p.add_argument("--seed", type=int)
    p.add_argument("--workdir")
    p.add_argument("--report", default=os.path.join(ROOT, ".test-logs", "reliability.json"))
    p.add_argument("--storm-blast", help=argparse.SUPPRESS)  # the storm's client process (storm_blast)
    args = p.parse_args()
    if args.storm_blast:
        return storm.storm_blast(args.storm_blast)
    if args.list:
        print("\n".join(SCENARIOS))
        return 0
    ci = args.ci
    defaults = dict(kills=(50 if ci else 100), restarts=(5 if ci else 20), absent=(8 if ci else 30), refused_window=(5 if ci else 10),
                    stuck_seconds=(10 if ci else 30), hostile_rounds=(1 if ci else 2), storm_clients=(5 if ci else 20),
                    storm_commands=(100 if ci else 1000))
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.seed is None:
        # The reduced run is part of the test command: the same choices on every machine.
        args.seed = 1 if ci else random.randrange(1, 1 << 31)
    if not args.pacer:
        args.pacer = os.path.join(ROOT, ".build", "debug", "pacer")
    if not os.access(args.pacer, os.X_OK):
        print(f"no pacer binary at {args.pacer}: build with `swift build --build-tests` or pass --pacer", file=sys.stderr)
        return 2
    # The reduced run leaves out the kill scenario: the test command runs the same Swift suite
    # (CrashRestartTests, 30 kills) in its kill-and-restart group.
    chosen = args.only.split(",") if args.only else [n for n in SCENARIOS if not (ci and n == "kill")]
    unknown = [c for c in chosen if c not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s) {unknown}; known: {list(SCENARIOS)}", file=sys.stderr)
        return 2
    suite = Suite(args)
    print(f"reliability: seed {args.seed}, pacer {args.pacer}, files in {suite.workdir}", flush=True)
    started = time.monotonic()
    for name in chosen:
        t0 = time.monotonic()
        try:
            SCENARIOS[name](suite)
        except Exception as e:  # a scenario that breaks is a failure, the others still run
            suite.failures.append(f"{name}: stopped: {type(e).__name__}: {e}")
            print(f"  FAIL stopped: {type(e).__name__}: {e}", flush=True)
        print(f"  ({name}: {time.monotonic() - t0:.0f} s)", flush=True)
    suite.figures["_run"] = {"seed": args.seed, "seconds": round(time.monotonic() - started), "failures": suite.failures, "known_issues": suite.known_issues,
                             "args": {k: v for k, v in vars(args).items() if k not in ("pacer", "workdir", "report")}}
    os.makedirs(os.path.dirname(args.report), exist_ok=True)
    with open(args.report, "w") as f:
        json.dump(suite.figures, f, indent=1)
    print(f"reliability: {len(suite.failures)} failure(s) in {time.monotonic() - started:.0f} s; figures in {args.report}")
    for failure in suite.failures:
        print(f"  - {failure}")
    for issue in suite.known_issues:
        print(f"  known issue (fails with --strict): {issue}")
    if not suite.failures:
        shutil.rmtree(suite.workdir, ignore_errors=True)
    else:
        print(f"files kept in {suite.workdir}")
    return 1 if suite.failures else 0
