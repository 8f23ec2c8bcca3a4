"""The hostile scenario's phases with retained messages (functions of a HostileRun): the state
phase plants the hostile retained states while probe timers finish offline, so the node's
outbox check reads them back on its reconnect (and, if the node dies on them, bisects the set
to the states that kill it alone); the final restart brings the node up with every hostile
retained message still on the broker."""
import json
import time

from .common import parse_json


def plant(run, cases, label):
    """Holds the probe timers of these cases (started, then cut off from the broker while they
    finish: their finished events wait in the outbox), plants the hostile retained states,
    and lets the node reconnect: the outbox check reads them back. Returns the outcome."""
    probes = sorted({c.timer for c in cases if c.timer.startswith("st")})
    for timer in probes:
        r = run.s.send({"action": "start", "timer": timer, "restart": True, "spec": {"kind": "countdown", "duration": "2s"}},
                       timeout=run.TIMEOUT_S)
        if not r.get("ok"):
            run.problem(f"state phase ({label})", "state phase", f"could not start the probe {timer}: {r}")
        run.touched.add(timer)
    last_start = time.monotonic()
    run.close()
    run.gate.close()
    run.broker.stop()
    time.sleep(max(0.0, 2.0 + 0.6 - (time.monotonic() - last_start)))  # every probe finished, offline
    run.broker.start()
    run.connect()
    for c in cases:
        run.pub.publish(run.topic(c), c.payload, retain=True, wait=True)
    index = run.listener.count()
    run.gate.open()
    outcome = {"cases": len(cases), "probes": len(probes)}
    try:
        run.wait_online(index)
        end = time.monotonic() + 4  # the outbox check waits 1.5 s at most for the retained states
        finished = {}
        while time.monotonic() < end:
            finished = {}
            for m in run.listener.since(index):
                j = parse_json(m[2]) if m[1].endswith("/event") else None
                if isinstance(j, dict) and j.get("type") == "finished" and j.get("timer") in probes:
                    finished[j["timer"]] = finished.get(j["timer"], 0) + 1
            if len(finished) == len(probes) or not run.node.alive():
                break
            time.sleep(0.2)
        outcome["finished_events_published"] = sum(finished.values())
        outcome["finished_events_suppressed"] = [t for t in probes if t not in finished]
        outcome["finished_events_published_twice"] = [t for t in probes if finished.get(t, 0) > 1]
    except TimeoutError:
        outcome["online"] = False
    outcome["alive"] = run.node.alive()
    outcome["answering"] = outcome["alive"] and run.barrier() is not None
    # Nothing was sent but the clock requests and the list: any other reply answers a retained
    # command replayed on the reconnect.
    replies = [r for _, r in run.replies_since(index) if run.rid_of(r) not in run.barrier_ids
               and not str(run.rid_of(r)).startswith("q")]
    outcome["replies_during_reconnect"] = [json.dumps(r)[:160] for r in replies]
    return outcome


def clear(run, cases):
    for c in cases:
        run.pub.publish(run.topic(c), b"", retain=True, wait=True)


def state_phase(run, cases, baseline):
    t0 = time.monotonic()
    outcome = plant(run, cases, "all")
    run.phases["state_phase"] = outcome
    culprits = []
    if not outcome["answering"]:
        # Find which: clear them, restart, and plant halves until each culprit is alone.
        clear(run, cases)
        run.restart_node("the state phase (all retained states at once)", kill=outcome["alive"])
        half = len(cases) // 2
        culprits = bisect_states(run, cases[:half]) + bisect_states(run, cases[half:])
        outcome["culprits"] = [c.name for c in culprits]
        if not culprits:
            run.problem("state phase", "died", "the node died reading the retained states back, but no single one kills it alone")
    for case in cases:
        died = case in culprits
        res = {"case": case.name, "round": 0, "kind": "state", "expect": case.expect, "field": None, "bytes": len(case.payload),
               "problems": ["the node died (or hung) reading this retained state back on a reconnect"] if died else []}
        if died:
            run.problem(case.name, "died", res["problems"][0])
        run.results.append(res)
        run.ran.append(case)
    for key in ("finished_events_published_twice", "replies_during_reconnect"):
        if outcome.get(key):
            run.problem("state phase", "state phase", f"{key}: {outcome[key][:5]}")
    outcome["seconds"] = round(time.monotonic() - t0, 1)
    run.check_untouched("after the state phase", baseline, live=True)


def bisect_states(run, cases):
    if not cases:
        return []
    outcome = plant(run, cases, f"{len(cases)} of them")
    if outcome["answering"]:
        clear(run, cases)
        return []
    clear(run, cases)
    run.restart_node(f"the state phase ({len(cases)} retained states)", kill=outcome["alive"], quiet=True)
    if len(cases) == 1:
        return cases
    half = len(cases) // 2
    return bisect_states(run, cases[:half]) + bisect_states(run, cases[half:])


def final_restart(run, baseline):
    """A node restart with every hostile retained message still on the broker: it comes up,
    replays no retained command, and lists the same timers."""
    before = run.listing()
    states = {t: run.latest_state(t) for t in run.UNTOUCHED}
    index = run.listener.count()
    run.node.stop()
    run.node.start()
    out = {}
    try:
        run.wait_online(index)
        time.sleep(2)  # a retained command replayed would be answered by now
        replayed = [json.dumps(r)[:160] for _, r in run.replies_since(index)]
        run.barrier()
        after = run.listing()
        out = {"came_back": True, "retained_commands_answered": replayed,
               "missing_timers": sorted(set(before) - set(after)), "new_timers": sorted(set(after) - set(before))}
        for t in run.UNTOUCHED:
            now = run.latest_state(t, index)
            out[t] = {"before": states[t], "after": now}
            if not now or now[0] != "running" or now[2] != states[t][2]:
                run.problem("final restart", "running timers touched", f"{t} was {states[t]}, after the restart {now} (status, revision, ends_at_ms)")
            elif now[1] != states[t][1]:
                out[t]["note"] = "the revision changed across the restart"
        if replayed:
            run.problem("final restart", "final restart", f"retained commands were answered after the restart: {replayed[:3]}")
        if out["missing_timers"] or out["new_timers"]:
            run.problem("final restart", "final restart", f"timers missing {out['missing_timers'][:5]}, new {out['new_timers'][:5]}")
    except TimeoutError:
        out = {"came_back": False, "log_tail": [line[-300:] for line in run.node.log().splitlines()][-4:]}
        run.problem("final restart", "final restart", f"the node did not come back online within 30 s (alive: {run.node.alive()})")
    run.phases["final_restart"] = out
