"""The hostile scenario (docs/RELIABILITY.md, "Hostile input"): the payloads of
hostile_payloads.py on every topic the node reads, one at a time, then their retained states read
back on a reconnect and a final restart, while two timers run untouched; and its report (figures,
summary lines and one failed check per kind of problem). The moving parts are in hostile_run.py
and hostile_retained.py."""
import os
import time

from . import hostile_payloads
from .common import now_ms, summary
from .hostile_retained import final_restart, state_phase
from .hostile_run import HostileRun
from .processes import Broker, Gate, Node, proc_rss_kb


# keep and circuit run untouched through every case (bound to the heart-rate source c,
# which nothing publishes on); hx is the idle target of the hostile commands; okt takes the
# valid starts; hra and hrb show what their sources (a: plain bpm, b: JSON) accepted.
HOSTILE_CONFIG = ("heart_rate:\n"
                  "  stale_after: 10s\n"
                  "  sources:\n"
                  "    - {name: c, topic: hr/c}\n"
                  "    - {name: a, topic: hr/a}\n"
                  "    - {name: b, topic: hr/b, field: data.bpm}\n"
                  "timers:\n"
                  "  - {id: keep, name: Keep, spec: {kind: countdown, duration: 30m}}\n"
                  "  - {id: circuit, name: Circuit, spec: {kind: interval, work: 10m, rest: 1m, rounds: 3}}\n"
                  "  - {id: hx, name: Hostile target, spec: {kind: countdown, duration: 5m}}\n"
                  "  - {id: okt, name: Valid starts, spec: {kind: countdown, duration: 1h}}\n"
                  "  - {id: hra, spec: {kind: countdown, duration: 5m, hr_source: a}}\n"
                  "  - {id: hrb, spec: {kind: countdown, duration: 5m, hr_source: b}}\n")


def scenario_hostile(suite):
    rounds = suite.args.hostile_rounds
    cases = hostile_payloads.cases(now_ms())
    kinds = {}
    for c in cases:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    suite.say(f"hostile: {len(cases)} hostile payloads on every topic the node reads "
              f"({', '.join(f'{k} {v}' for k, v in kinds.items())}), {rounds} round(s) (Tests/harness/reliability/hostile_payloads.py)")
    d = suite.dir("hostile")
    # A persistent broker: the retained commands and states outlive its restart (the state phase).
    broker = Broker(os.path.join(d, "broker"), persistence=True)
    broker.start()
    gate = Gate(broker.port)  # the node's way to the broker, closed while retained states are planted
    gate.open()
    node = Node(suite.pacer, os.path.join(d, "node"), gate.port, HOSTILE_CONFIG)
    node.start()
    run = HostileRun(suite, node, broker, gate)
    t_start = time.monotonic()
    try:
        run.wait_online(0)
        for timer in ("keep", "circuit"):
            r = run.s.send({"action": "start"}, timer=timer, timeout=HostileRun.TIMEOUT_S)
            suite.check("hostile", r.get("ok"), f"start {timer}: {r}")
        run.barrier()
        run.rebaseline("before the cases")
        baseline = run.listing()
        replying = [c for c in cases if c.kind != "state"]
        round_rss = []
        log_start = len(node.log())
        for rnd in range(rounds):
            first = len(run.results)
            for case in replying:
                run.run(hostile_payloads.with_round(case, rnd), rnd)
            time.sleep(1)  # late or repeated replies
            run.evaluate(first, len(run.results))
            round_rss.append(proc_rss_kb(node.pid))
            run.rss.append((len(run.results), node.pid, round_rss[-1]))
        run.check_log(log_start)
        run.check_untouched("after the cases", baseline)
        ghosts = run.retained_nexts(sorted({c.timer for c in cases if c.kind == "next"}))
        if ghosts:
            run.problem("next", "not cleared", f"a retained next on a timer no schedule starts was left: {ghosts[:5]}")
        state_phase(run, [c for c in cases if c.kind == "state"], baseline)
        final_restart(run, baseline)
        seconds = round(time.monotonic() - t_start, 1)
        report(run, cases, rounds, round_rss, seconds)
    finally:
        run.close()
        node.stop()
        gate.close()
        broker.stop()


def report(run, cases, rounds, round_rss, seconds):
    """The hostile scenario's figures, summary lines and checks, one failure line per kind of problem."""
    say, check = run.suite.say, run.suite.check
    by_kind = {}
    for c in cases:
        k = by_kind.setdefault(c.kind, {"cases": 0, "failed": 0})
        k["cases"] += 1
    failed_cases = {}
    for case, res in zip(run.ran, run.results):
        if res.get("problems"):
            failed_cases.setdefault(case.name, res)
    for name, res in failed_cases.items():
        by_kind[res["kind"]]["failed"] += 1
    # RSS: from the first batch to the end of one node process (a death starts another).
    run.rss.sort()
    runs = {}
    for n, pid, kb in run.rss:
        runs.setdefault(pid, []).append((n, kb))
    longest = max(runs.values(), key=len, default=[])
    growth = longest[-1][1] - longest[0][1] if len(longest) >= 2 else None
    ms = [r["ms"] for r in run.results if "ms" in r]
    fig = {"cases": len(cases), "by_kind": by_kind, "rounds": rounds, "seconds": seconds, "hx_repairs": getattr(run, "repairs", 0),
           "cases_failed": len(failed_cases), "problems": run.problems, "deaths": run.deaths,
           "node_rss_kb_every_50_cases": [{"cases": n, "pid": pid, "kb": kb} for n, pid, kb in run.rss],
           "node_rss_growth_kb": growth, "node_rss_kb_by_round": round_rss, "case_ms": summary(ms),
           "unclear_messages": run.unclear, "phases": run.phases,
           "results": [{k: v for k, v in r.items() if k != "index"} for r in run.results]}
    run.suite.figures["hostile"] = fig
    say(f"  {len(run.results)} payloads in {seconds} s (a reply in {fig['case_ms'].get('median')} ms median, "
        f"{fig['case_ms'].get('max')} ms max); cases that failed per topic: "
        + ", ".join(f"{k} {v['failed']}/{v['cases']}" for k, v in by_kind.items()))
    if run.rss:
        say(f"  node RSS (kB) after the first 50 cases {longest[0][1] if longest else None}, at the end {longest[-1][1] if longest else None}, "
            f"max {max(kb for _, _, kb in run.rss if kb)}; deaths {len(run.deaths)}")
    state_deaths = [x for x in run.deaths if x["case"].startswith("the state phase")]
    for death in [x for x in run.deaths if x not in state_deaths][:10]:
        say(f"  the node died on case {death['case']!r}: {death['how']}; {death['cause']}")
    if state_deaths:
        say(f"  the node died {len(state_deaths)} times in the state phase (finding which retained state kills it): "
            f"{'; '.join(sorted({x['how'] + ', ' + str(x['cause']) for x in state_deaths}))}")
    state = run.phases.get("state_phase", {})
    say(f"  {len(state.get('culprits', [])) and 'the node died on ' + ', '.join(state['culprits']) or 'the node read the hostile retained states back and stayed up'}; "
        f"finished events of the held probes published {state.get('finished_events_published')}, "
        f"withheld as proven by a forged state {len(state.get('finished_events_suppressed', []))}")
    if run.unclear:
        say(f"  {len(run.unclear)} unclear error messages (not failures; in the report), e.g. "
            + "; ".join(f"{u['case']}: {u['why']}" for u in run.unclear[:3]))
    # One failure line per kind of problem, with its count and first cases (all in the report).
    groups = {}
    for p in run.problems:
        items = groups.setdefault(p["category"], {})
        items.setdefault(p["case"], p)  # a case that fails again in a later round counts once
    fig["problems_by_category"] = {k: len(v) for k, v in groups.items()}
    for category, items in groups.items():
        items = list(items.values())
        also = f"; also {', '.join(repr(p['case']) for p in items[1:3])}{' ...' if len(items) > 3 else ''}" if len(items) > 1 else ""
        check("hostile", False, f"{category} ({len(items)} case{'s' if len(items) > 1 else ''}): {items[0]['case']!r}: {items[0]['text'][:140]}{also}")
    check("hostile", run.node.alive(), "the node is not running at the end")
    if growth is None:
        say("  node RSS growth not measured: fewer than two samples of one node process")
    else:
        check("hostile", growth < 30_000,
              f"node RSS grew {growth} kB from the first batch of 50 cases to the end (bound 30,000 kB): {[kb for _, kb in longest]}")
    if len(round_rss) >= 3:
        check("hostile", round_rss[-1] - round_rss[1] < 20_000, f"node RSS grew {round_rss[1]} -> {round_rss[-1]} kB over the rounds")
