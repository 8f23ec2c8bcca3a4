"""The moving parts of the hostile scenario (HostileRun): its node (restarted when a case kills
it or it stops answering), listener and publisher; running one case and waiting for its reply or
a clock request after it; attributing the replies to the cases and judging them (one clear
error naming the field, the request id echoed, heart-rate readings shown or not); the node's log
checked for injected lines; and the timers no case may touch checked against their baseline."""
import bisect
import json
import os
import random
import re
import signal
import time

from . import hostile_payloads
from .common import parse_json
from .mqtt import connect_retrying
from .processes import proc_rss_kb
from .session import Session


OWN_ID = re.compile(r"^q\d+-\d+$")  # the request ids of Session.send


class HostileRun:
    """The moving parts of scenario_hostile: the node (restarted when a case kills it), a
    listener (replies, states, events, discovery configs: not the command topics, which carry
    the 16 MiB payloads), a publisher, and every case's outcome.

    Cases run one at a time: a case is published, then its reply is awaited (at most TIMEOUT_S);
    a case that gets no reply (heart rate, Home Assistant's status) is followed by a clock
    request on `<base>/cmd`, whose reply says the node handled the case and is still answering.
    Replies are attributed to cases afterwards: by request id, else (id null: the node could not
    read one) to the case whose turn it was."""

    REPLY_KINDS = ("cmd", "timer_cmd", "time")
    TIMEOUT_S = 15
    UNTOUCHED = ("keep", "circuit")
    HR_TIMERS = {"hr": "hra", "hr_json": "hrb"}

    def __init__(self, suite, node, broker, gate):
        self.suite, self.node, self.broker, self.gate = suite, node, broker, gate
        self.listen = [node.topic("reply"), node.topic("status"), node.topic("timers", "+", "state"),
                       node.topic("timers", "+", "event"), "homeassistant/device/#"]
        self.results, self.ran = [], []   # one per case run, in order
        self.deaths, self.rss, self.unclear, self.problems = [], [], [], []
        self.known_rids, self.barrier_ids = set(), set()
        self.last_hr = {}
        self.untouched = {}               # timer -> (status, revision, ends_at_ms) before
        self.touched = {"hra", "hrb"}     # timers a valid case (or reading) may change
        self.phases = {}
        self.connect()

    # --- plumbing -------------------------------------------------------------------------------

    def connect(self):
        self.s = Session(self.node, self.broker.port, "rel-hostile", topics=self.listen)
        self.pub = connect_retrying(self.broker.port, f"rel-hostile-pub-{os.getpid()}-{random.randrange(1 << 30)}")

    def close(self):
        for c in (self.s.client, self.pub):
            c.close()

    @property
    def listener(self):
        return self.s.client

    def topic(self, case):
        n = self.node
        if case.kind in ("timer_cmd", "state", "next"):
            return n.topic("timers", case.timer, {"timer_cmd": "cmd"}.get(case.kind, case.kind))
        return {"cmd": n.topic("cmd"), "time": n.topic("time"), "hr": "hr/a", "hr_json": "hr/b",
                "ha_status": "homeassistant/status"}[case.kind]

    def replies_since(self, index):
        """(listener index, parsed reply) of every reply from `index` on."""
        reply_t = self.node.topic("reply")
        with self.listener.cond:
            msgs = self.listener.messages[index:]
        return [(index + i, parse_json(m[2])) for i, m in enumerate(msgs) if m[1] == reply_t]

    @staticmethod
    def rid_of(reply):
        rid = reply.get("id") if isinstance(reply, dict) else "?"
        return rid if rid is None or isinstance(rid, str) else repr(rid)

    def barrier(self, timeout=None):
        """A clock request's round trip: the node has handled everything published before it.
        Its reply, or None (no reply within TIMEOUT_S)."""
        rid = f"b{len(self.barrier_ids) + 1}"
        self.barrier_ids.add(rid)
        index = self.listener.count()
        self.pub.publish(self.node.topic("cmd"), json.dumps({"action": "time", "id": rid}))
        try:
            self.listener.wait_for(lambda: any(self.rid_of(r) == rid for _, r in self.replies_since(index)),
                                   timeout or self.TIMEOUT_S, "the clock request after a case")
        except TimeoutError:
            return None
        return next(r for _, r in self.replies_since(index) if self.rid_of(r) == rid)

    def wait_online(self, index, timeout=30):
        """The node's status `online`, published live (not the retained copy) after `index`."""
        status = self.node.topic("status")
        self.listener.wait_for(lambda: any(m[1] == status and m[2] == b"online" and (not m[3] or index == 0)
                                           for m in self.listener.since(index)), timeout, "the node's status online")

    def latest_state(self, timer, since=0):
        t = self.node.topic("timers", timer, "state")
        for m in reversed(self.listener.since(since)):
            if m[1] == t:
                j = parse_json(m[2])
                if isinstance(j, dict) and j.get("id") == timer and isinstance(j.get("revision"), int):
                    return (j.get("status"), j.get("revision"), j.get("ends_at_ms"))
        return None

    def retained_state(self, timer):
        """The retained state a display connecting now reads."""
        c = connect_retrying(self.broker.port, f"rel-hostile-ret-{random.randrange(1 << 30)}")
        try:
            c.subscribe(self.node.topic("timers", timer, "state"), qos=0)
            try:
                c.wait_for(lambda: c.count() > 0, 5, f"{timer}'s retained state")
            except TimeoutError:
                return None
            j = parse_json(c.since(0)[-1][2])
            return (j.get("status"), j.get("revision"), j.get("ends_at_ms")) if isinstance(j, dict) else None
        finally:
            c.close()

    def retained_nexts(self, timers):
        """The timers among `timers` whose `next` a display connecting now still reads non-empty
        (the node clears a `next` on a timer no schedule starts)."""
        c = connect_retrying(self.broker.port, f"rel-hostile-next-{random.randrange(1 << 30)}")
        try:
            c.subscribe(self.node.topic("timers", "+", "next"), qos=0)
            time.sleep(1)  # retained messages come at once; a second is plenty on loopback
            shown = {m[1] for m in c.since(0) if m[2]}
            return sorted(t for t in timers if self.node.topic("timers", t, "next") in shown)
        finally:
            c.close()

    def listing(self):
        r = self.s.send({"action": "list"}, timeout=self.TIMEOUT_S)
        return {t.get("id"): (t.get("status"), t.get("revision")) for t in r.get("timers", [])}

    def rebaseline(self, when):
        for timer in self.UNTOUCHED:
            self.untouched[timer] = self.latest_state(timer)
        self.phases.setdefault("untouched_baselines", []).append({"when": when, **{t: self.untouched[t] for t in self.UNTOUCHED}})

    def problem(self, case_name, category, text, rnd=0):
        """A failed check: `category` groups it in the summary (e.g. "accepted", "field not named")."""
        self.problems.append({"case": case_name, "category": category, "text": text, "round": rnd})

    # --- the node dies or hangs -------------------------------------------------------------------

    def restart_node(self, why, kill=False, quiet=False):
        if kill:
            self.node.stop(signal.SIGKILL)
        code = self.node.proc.returncode if self.node.proc else None
        how = "killed after it stopped answering" if kill else (f"signal {-code} ({signal.Signals(-code).name})" if code and code < 0 else f"exit status {code}")
        self.deaths.append({"case": why, "how": how, "cause": self.crash_cause()})
        if not quiet:
            self.suite.say(f"  the node died on case {why!r} ({how}); restarting it")
        index = self.listener.count()
        self.log_offset = len(self.node.log())
        self.node.start()
        try:
            self.wait_online(index)
        except TimeoutError:
            self.problem(why, "died", "the node did not come back online within 30 s after a restart")
        self.barrier()
        self.rebaseline(f"after the node died on {why!r}")

    def crash_cause(self):
        """What the node's log says since its last start: Swift's fatal error and the first frame
        in pacer of the crashed thread (e.g. `EngineMachine.retainedState(...) at
        EngineMachine+Outbox.swift:69`)."""
        lines = self.node.log()[getattr(self, "log_offset", 0):].splitlines()
        fatal = next((ln.strip() for ln in lines if "Fatal error" in ln or "*** Program crashed" in ln), None)
        start = next((i for i, ln in enumerate(lines) if ln.rstrip().endswith("crashed:")), None)
        frame = None
        if start is not None:
            for ln in lines[start:start + 40]:
                m = re.search(r"\d+ \S*\s+0x[0-9a-f]+ (.+?) \+ \d+ in pacer at (\S+)", ln)
                if m:
                    frame = f"{m.group(1)[:120]} at {os.path.basename(m.group(2))}"
                    break
        return "; ".join(x for x in (fatal, frame) if x)[:400] or None

    def after_case(self, case_name, res):
        if not self.node.alive():
            res["died"] = True
            self.restart_node(case_name)
            d = self.deaths[-1]
            res["death"] = d["how"] + (f"; {d['cause']}" if d["cause"] else "")
        elif res.get("no_reply") and self.barrier() is None:
            res["hung"] = True
            self.restart_node(case_name, kill=True)

    # --- one case ---------------------------------------------------------------------------------

    def run(self, case, rnd):
        index = self.listener.count()
        known_before = set(self.known_rids)
        if case.rid:
            self.known_rids.add(case.rid)
        res = {"case": case.name, "round": rnd, "kind": case.kind, "expect": case.expect, "field": case.field,
               "bytes": len(case.payload), "index": index}
        self.results.append(res)
        self.ran.append(case)
        t0 = time.monotonic()
        self.pub.publish(self.topic(case), case.payload, retain=case.retain)
        if case.kind in self.REPLY_KINDS and case.expect != "dropped":
            def mine(r):
                rid = self.rid_of(r)
                return rid == case.rid or rid is None or (rid not in known_before and rid not in self.barrier_ids)
            try:
                self.listener.wait_for(lambda: any(mine(r) for _, r in self.replies_since(index)) or not self.node.alive(),
                                       self.TIMEOUT_S, f"the reply to {case.name}")
                reply = next((r for _, r in self.replies_since(index) if mine(r)), None)
                if (isinstance(reply, dict) and reply.get("ok") and reply.get("timer") == hostile_payloads.HX
                        and case.expect not in ("ok", "any")):
                    self.repair_hx()  # so one wrongly accepted command does not change what the next cases meet
            except TimeoutError:
                res["no_reply"] = True
        else:
            if self.barrier() is None:
                res["no_reply"] = True
            if case.expect == "ha_online":
                try:
                    self.listener.wait_for(lambda: any(m[1].startswith("homeassistant/device/") for m in self.listener.since(index)),
                                           5, "the discovery configs")
                except TimeoutError:
                    pass
                res["discovery_configs"] = sum(1 for m in self.listener.since(index) if m[1].startswith("homeassistant/device/"))
            if case.kind in self.HR_TIMERS:
                t = self.node.topic("timers", self.HR_TIMERS[case.kind], "state")
                seen = [j.get("hr") for j in (parse_json(m[2]) for m in self.listener.since(index) if m[1] == t)
                        if isinstance(j, dict) and j.get("hr") is not None]
                res["hr_seen"] = seen
        res["ms"] = round((time.monotonic() - t0) * 1000, 1)
        self.after_case(case.name, res)
        if len(self.results) % 50 == 0:
            self.rss.append((len(self.results), self.node.pid, proc_rss_kb(self.node.pid)))

    def repair_hx(self):
        """hx back to what the cases expect: idle, with its configured spec."""
        self.s.send({"action": "delete", "timer": hostile_payloads.HX}, timeout=self.TIMEOUT_S)
        r = self.s.send({"action": "create", "timer": hostile_payloads.HX, "name": "Hostile target",
                         "spec": {"kind": "countdown", "duration": "5m"}}, timeout=self.TIMEOUT_S)
        self.repairs = getattr(self, "repairs", 0) + 1
        if not r.get("ok"):
            self.problem("repairing hx", "state phase", f"could not recreate hx: {r}")

    # --- judging ----------------------------------------------------------------------------------

    def evaluate(self, first, last):
        """Attributes the replies since case `first` to the cases [first, last) and judges them."""
        starts = [self.results[i]["index"] for i in range(first, last)]
        assigned = {i: [] for i in range(first, last)}
        for pos, reply in self.replies_since(starts[0]):
            rid = self.rid_of(reply)
            if rid in self.barrier_ids or (isinstance(rid, str) and OWN_ID.match(rid)):
                continue  # a clock request between cases, or a command of the suite's own (Session.send)
            w = first + max(0, bisect.bisect_right(starts, pos) - 1)
            case = self.ran[w]
            if not (rid == case.rid or rid is None or rid not in self.known_rids):
                earlier = [i for i in range(w, first - 1, -1) if self.ran[i].rid == rid]
                w = earlier[0] if earlier else w
            assigned[w].append(reply)
        for i in range(first, last):
            self.judge(self.ran[i], self.results[i], assigned[i])

    def judge(self, case, res, replies):
        res["replies"] = len(replies)
        problems = []
        if case.kind in self.REPLY_KINDS and case.expect != "dropped":
            if res.get("died"):
                pass  # reported below
            elif res.get("no_reply") or not replies:
                problems.append(("no reply", f"no reply within {self.TIMEOUT_S} s"))
            elif len(replies) != 1:
                problems.append(("not one reply", f"{len(replies)} replies"))
            if replies:
                r = replies[0] if isinstance(replies[0], dict) else {}
                ok = r.get("ok") is True
                err = r.get("error") if isinstance(r.get("error"), dict) else {}
                code, msg = err.get("code"), err.get("message")
                res["code"] = "ok" if ok else code
                res["message"] = msg[:300] if isinstance(msg, str) else msg
                want = case.expect.partition(":")[2]
                if case.expect == "ok":
                    if not ok:
                        problems.append(("refused, expected ok", f"refused ({code}: {str(msg)[:160]!r}), expected ok"))
                    elif case.kind == "time" and not isinstance(r.get("now_ms"), int):
                        problems.append(("refused, expected ok", f"a clock reply without now_ms: {json.dumps(r)[:160]}"))
                elif case.expect.startswith("error"):
                    if ok:
                        problems.append(("accepted, expected an error", f"accepted, expected {case.expect}: {json.dumps(r)[:160]}"))
                    elif not code or not isinstance(msg, str) or not msg.strip():
                        problems.append(("error without code or message", f"an error reply without a code or a message: {json.dumps(r)[:160]}"))
                    else:
                        if want and code != want:
                            problems.append(("another error code", f"{code}, expected {want} ({msg[:160]!r})"))
                        if case.field and not re.search(rf"(?<![A-Za-z0-9_]){re.escape(case.field)}(?![A-Za-z0-9_])", msg):
                            if code == "bad_json":
                                # Grammatical JSON refused as bad_json (a number beyond Double's range):
                                # the byte is named, the field is not.
                                if not res.get("round"):
                                    self.unclear.append({"case": case.name, "why": f"does not name {case.field!r}", "code": code, "message": msg[:200]})
                            else:
                                problems.append((f"the message does not name the field", f"does not name {case.field!r}: {code} {msg[:160]!r}"))
                        why = self.unclear_why(msg)
                        if why and not res.get("round"):
                            self.unclear.append({"case": case.name, "why": why, "code": code, "message": msg[:200]})
                got = r.get("id")
                # An id that is itself refused (too long, control characters) cannot be echoed.
                if case.rid is not None and got != case.rid and not (got is None and (code == "payload_too_large" or case.field == "id" or len(case.rid) > 128
                                                                           or any(ord(c) < 0x20 for c in case.rid))):
                    problems.append(("request id not echoed", f"the reply's id is {str(got)[:40]!r}, not the request's {case.rid[:40]!r}"))
                if ok and isinstance(r.get("timer"), str):
                    self.touched.add(r["timer"])
        else:
            if replies:
                problems.append(("not one reply", f"{len(replies)} unexpected replies: {json.dumps(replies[0])[:160]}"))
            if res.get("no_reply"):
                problems.append(("no reply", f"the clock request after it got no reply within {self.TIMEOUT_S} s"))
            if case.kind in self.HR_TIMERS:
                timer = self.HR_TIMERS[case.kind]
                seen, before = res.get("hr_seen", []), self.last_hr.get(timer)
                if case.expect.startswith("hr:"):
                    want = int(case.expect[3:])
                    if want not in seen and before != want:
                        problems.append(("heart rate", f"a valid reading: {timer}'s state did not show {want} bpm (saw {seen})"))
                elif case.expect == "none" and any(v != before for v in seen):
                    problems.append(("heart rate", f"accepted as {seen[-1]} bpm ({timer}'s state changed from {before})"))
                if seen:
                    self.last_hr[timer] = seen[-1]
            if case.expect == "ha_online" and not res.get("discovery_configs"):
                problems.append(("home assistant", "Home Assistant's online did not make the node publish its discovery configs again"))
        if res.get("died"):
            problems.append(("died", f"the node died on it: {res.get('death')}"))
        if res.get("hung"):
            problems.append(("died", "the node stopped answering after it (killed and restarted)"))
        res["problems"] = [text for _, text in problems]
        for category, text in problems:
            self.problem(case.name, category, text, res.get("round", 0))

    @staticmethod
    def unclear_why(msg):
        if len(msg) < 12:
            return "too short"
        if len(msg) > 600:
            return f"{len(msg)} characters long"
        if any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in msg):
            return "control characters in the message"
        # Swift's own spellings leaking into a message meant for a person.
        for word in ("Optional(", "Swift.", "Error(", "nil", "got nan", "got inf", "got -inf", "-nan"):
            if re.search(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", msg):
                return f"'{word}' in the message"
        return None

    def check_log(self, start):
        """The node's log since `start` (the cases): one line per record, no control character
        from a payload (docs/SECURITY.md: no log injection through newlines). A crash's
        backtrace (after Swift's "Fatal error" line) is left out."""
        timestamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
        control = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
        bad, in_crash = [], False
        for line in self.node.log()[start:].split("\n"):
            if timestamp.match(line):
                in_crash = False
            elif re.search(r"Fatal error|\*\*\* Program crashed", line):
                in_crash = True
                continue
            if in_crash or not line:
                continue
            if not timestamp.match(line) or control.search(line) or re.match(r"^\S+ critical pacer: " + re.escape(hostile_payloads.FORGED_MARK), line):
                bad.append(line)
        self.phases["log_lines_with_payload_control_characters"] = [repr(x[:160]) for x in bad[:20]]
        if bad:
            self.problem("the node's log", "log injection",
                         f"{len(bad)} log lines carry a payload's raw newline or control characters (a forged log line): "
                         + "; ".join(repr(x[:70]) for x in bad[:3]))

    def check_untouched(self, when, baseline, live=False):
        """keep and circuit as before (status, revision, ends_at_ms), read from the retained state
        (a display connecting now) or the last state published; every other timer no valid case
        changed lists as before."""
        out = {}
        for timer in self.UNTOUCHED:
            now = self.latest_state(timer) if live else self.retained_state(timer)
            out[timer] = {"before": self.untouched.get(timer), "now": now}
            if now != self.untouched.get(timer) or not now or now[0] != "running":
                self.problem(f"untouched timers ({when})", "running timers touched",
                             f"{timer} was {self.untouched.get(timer)}, now {now} (status, revision, ends_at_ms)")
        listed = self.listing()
        changed = sorted(t for t in baseline if t not in self.touched and listed.get(t) != baseline[t]
                         and t not in self.UNTOUCHED)  # those two are checked above (a death rebaselines them)
        appeared = sorted(t for t in listed if t not in baseline and t not in self.touched and not t.startswith("st"))
        if changed:
            self.problem(f"list ({when})", "state changed", f"changed: {[(t, baseline[t], listed.get(t)) for t in changed][:5]}")
        if appeared:
            self.problem(f"list ({when})", "state changed", f"timers no accepted command created: {appeared[:10]}")
        self.phases[when] = {"untouched": out, "timers_listed": len(listed), "changed": changed, "appeared": appeared}
        return listed
