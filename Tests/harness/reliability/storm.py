"""The command storm: storm (N clients x M QoS 1 pause/resume commands as fast as they can) and
stormlimit (the same with limits.command_rate on). Every command is answered once, every timer
ends in the state its accepted commands leave, and a running timer's flips stay on time (judged
at the subscriber's socket with kernel timestamps when root, else by the script's reader). The
storm's clients are a process of their own at the lowest priority (storm_blast, run as
`reliability --storm-blast`)."""
import json
import os
import subprocess
import sys
import threading
import time

from .common import SCRIPTS, lower_this_thread, now_ms, parse_json, summary
from .mqtt import connect_retrying
from .processes import Broker, Node, proc_rss_kb
from .session import Session, flip_lateness, skipped_flips
from .wire import BrokerBacklog, LoopbackSniffer


def scenario_stormlimit(suite):
    """The storm with the optional rate limit on (--storm-rate-limit, else 20/s, burst 20)."""
    _storm(suite, suite.args.storm_rate_limit or 20)


def scenario_storm(suite):
    _storm(suite, suite.args.storm_rate_limit)


def _storm(suite, limit):
    name = "stormlimit" if limit else "storm"
    clients, per = suite.args.storm_clients, suite.args.storm_commands
    suite.say(f"{name}: {clients} clients x {per} commands as fast as they can")
    d = suite.dir(name)
    broker = Broker(os.path.join(d, "broker"), persistence=False, extra=["max_queued_messages 100000", "max_inflight_messages 0"])
    broker.start()
    timers = "".join(f"  - {{id: s{k}, spec: {{kind: countdown, duration: 2h}}}}\n" for k in range(clients))
    if limit:
        suite.say(f"  with limits.command_rate {limit}, command_burst {limit} (every client commands its own timer's topic: its own bucket)")
    node = Node(suite.pacer, os.path.join(d, "node"), broker.port,
                (f"limits: {{command_rate: {limit}, command_burst: {limit}}}\n" if limit else "")
                + "timers:\n  - {id: beat, spec: {kind: countdown, duration: 2h}}\n" + timers)
    node.start()
    s = Session(node, broker.port)
    blaster = None
    try:
        s.wait_online()
        revisions = {}
        for k in range(clients):
            r = s.send({"action": "start"}, timer=f"s{k}")
            revisions[f"s{k}"] = r["revision"]
        s.send({"action": "start"}, timer="beat")
        # Without the capture (not root) this subscriber's reading is the measure: it keeps
        # its normal priority then.
        beat = connect_retrying(broker.port, "rel-storm-beat", low_priority=LoopbackSniffer.available())
        beat.subscribe(node.topic("timers", "beat", "#"))
        replies = connect_retrying(broker.port, "rel-storm-replies", low_priority=True)
        replies.subscribe(node.topic("reply"))
        sniffer = LoopbackSniffer(broker.port, node.topic("timers", "beat", "remaining")) if LoopbackSniffer.available() else None
        time.sleep(1.5)
        # The storm's clients run in a process of their own at the lowest priority
        # (lower_this_thread): on a gym's LAN they
        # are phones and buttons, whose CPU is not the node's. In this process (the GIL) or
        # at the same priority they would take the two cores from the broker and the node
        # they load, which measured the test, not the node (docs/RELIABILITY.md).
        blaster = subprocess.Popen([sys.executable, os.path.join(SCRIPTS, "reliability"), "--storm-blast",
                                    f"{broker.port}:{node.topic('timers')}:{clients}:{per}"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if blaster.stdout.readline().strip() != "ready":
            raise RuntimeError("the storm's client process did not connect")
        backlog = BrokerBacklog(broker.port, node.pid) if BrokerBacklog.available() else None
        t_start = now_ms()
        blaster.stdin.write("go\n")
        blaster.stdin.flush()
        sent_line = blaster.stdout.readline().strip()
        if not sent_line.startswith("sent"):
            raise RuntimeError(f"the storm's client process stopped: {sent_line!r}")
        t_sent = now_ms()
        total = clients * per
        try:
            replies.wait_for(lambda: len(replies.messages) >= total, max(60, total / 50), f"{total} replies")
        except TimeoutError:
            pass
        time.sleep(1)
        msgs = replies.since(0)
        t_last = max((m[0] for m in msgs), default=t_sent)
        # Flips are judged from the first publish to the last reply, and over at least 2 s
        # (a short storm may end before the next flip is due).
        t_window = max(t_last, t_start + 2000)
        while now_ms() < t_window + 500:
            time.sleep(0.1)
        counts, not_ok, codes, ok_count, last_ok = {}, 0, {}, {}, {}
        for m in msgs:
            j = parse_json(m[2]) or {}
            counts[j.get("id")] = counts.get(j.get("id"), 0) + 1
            timer_k = (j.get("id") or "c-").split("-")[0][1:]
            if not j.get("ok"):
                not_ok += 1
                code = (j.get("error") or {}).get("code")
                codes[code] = codes.get(code, 0) + 1
            else:
                ok_count[timer_k] = ok_count.get(timer_k, 0) + 1
                last_ok[timer_k] = "paused" if int(j["id"].split("-")[1]) % 2 == 0 else "running"
        expected_ids = {f"c{k}-{i}" for k in range(clients) for i in range(per)}
        missing = len(expected_ids - counts.keys())
        twice = sum(1 for v in counts.values() if v > 1)
        # State: every accepted command moved its timer's revision by one, and the last one
        # accepted decides running or paused (all accepted: an even number leaves it running).
        listed = {t["id"]: t for t in s.send({"action": "list"}, timeout=30).get("timers", [])}
        wrong_state = []
        for k in range(clients):
            t = listed.get(f"s{k}", {})
            want_status = last_ok.get(str(k), "running")
            want_revision = revisions[f"s{k}"] + ok_count.get(str(k), 0)
            if t.get("status") != want_status or t.get("revision") != want_revision:
                wrong_state.append((f"s{k}", t.get("status"), t.get("revision"), want_status, want_revision))
        sniffed, wire = {}, None
        if sniffer:
            drops = sniffer.stop()
            ends_at = next((st["ends_at_ms"] for st in (parse_json(m[2]) for m in reversed(beat.since(0))
                            if m[1] == node.topic("timers", "beat", "state")) if st and st.get("ends_at_ms")), None)
            beat_port = beat.sock.getsockname()[1]
            at_node, at_broker_out = {}, {}
            for ts, sport, dport, payload in sniffer.records:
                try:
                    value = int(payload)
                    due = ends_at - value * 1000
                except (TypeError, ValueError):
                    continue
                if not t_start <= due <= t_window:
                    continue
                if dport == broker.port:
                    at_node.setdefault(value, ts - due)
                elif sport == broker.port and dport == beat_port:
                    at_broker_out.setdefault(value, ts - due)
            arrived = {}
            for t, topic, payload, retain in beat.since(0):
                if topic == node.topic("timers", "beat", "remaining") and not retain and payload:
                    due = ends_at - int(payload) * 1000
                    if t_start <= due <= t_window:
                        arrived.setdefault(int(payload), t - due)
            worst = max(arrived, key=arrived.get, default=None)
            # A flip's arrival at the subscriber: the kernel's timestamp of the segment the
            # broker sent it in (on lo, sent is received), when the capture saw every flip the
            # subscriber read and dropped nothing. The time this script's subscriber thread
            # read it adds the script's own delay (a thread of the lowest priority).
            if not drops and all(v in at_broker_out for v in arrived):
                wire = [at_broker_out[v] for v in arrived]

            def share(d):
                return round(d[worst], 1) if worst in d else None
            sniffed = {"flip_sent_by_node_ms": summary(at_node.values()), "flip_sent_by_broker_to_subscriber_ms": summary(at_broker_out.values()),
                       "segments_dropped_by_the_capture": drops,
                       "worst_flip": {"remaining": worst, "left_node_ms": share(at_node), "left_broker_ms": share(at_broker_out),
                                      "read_by_the_script_ms": share(arrived)} if worst is not None else None}
            worst_wire = max(at_broker_out, key=at_broker_out.get, default=None)
            if worst_wire is not None:
                sniffed["worst_flip_at_the_subscriber_socket"] = {
                    "remaining": worst_wire, "left_node_ms": round(at_node[worst_wire], 1) if worst_wire in at_node else None,
                    "left_broker_ms": round(at_broker_out[worst_wire], 1)}
        unread = backlog.stop() if backlog else "not measured (no ss)"
        read_late = flip_lateness(beat.since(0), node, "beat", after_ms=t_start, before_ms=t_window)
        late = wire if wire and len(wire) >= len(read_late) else read_late
        rate = total / max(0.001, (t_last - t_start) / 1000)
        fig = {"clients": clients, "commands_per_client": per, "commands": total, "replies": len(msgs),
               "unanswered": missing, "answered_more_than_once": twice, "not_ok": not_ok,
               "seconds_to_last_reply": round((t_last - t_start) / 1000, 2), "seconds_to_publish_all": round((t_sent - t_start) / 1000, 2),
               "commands_per_s": round(rate), "timers_in_wrong_state": wrong_state[:5],
               "rate_limit": limit or None, "refused_by_code": codes,
               "accepted_per_s": round(sum(ok_count.values()) / max(0.001, (t_last - t_start) / 1000)),
               "flip_lateness_during_storm_ms": summary(late),
               "flip_lateness_judged_at": "the subscriber's socket (kernel timestamps)" if late is not read_late else "the script's subscriber thread",
               "flip_read_by_the_script_ms": summary(read_late),
               "flips_never_published_during_storm": skipped_flips(beat.since(0), node, "beat", after_ms=t_start, before_ms=t_window + 1000),
               "node_rss_kb": proc_rss_kb(node.pid),
               # Kernel timestamps of the TCP segments on lo (root only): the node's and the broker's share.
               "flip_lateness_on_the_wire": sniffed or "not measured (needs root for an AF_PACKET socket)",
               "node_to_broker_bytes_unread_by_broker": unread}
        suite.figures[name] = fig
        suite.say(f"  {json.dumps(fig)}")
        suite.check(name, missing == 0 and twice == 0, f"{missing} unanswered, {twice} answered more than once")
        if limit:
            suite.check(name, codes.get("rate_limited", 0) > 0, f"no rate_limited reply with limits.command_rate {limit}")
            suite.check(name, set(codes) <= {"rate_limited", "invalid_state"}, f"refusals other than rate_limited/invalid_state: {codes}")
        else:
            suite.check(name, not_ok == 0, f"{not_ok} replies not ok: {codes}")
        suite.check(name, not wrong_state, f"timers in a wrong state: {wrong_state[:5]}")
        suite.check(name, late, "no flip of the beat timer seen during the storm")
        suite.check(name, late and max(late) <= 20 and not fig["flips_never_published_during_storm"],
                    f"flips of a running timer during the storm: up to {max(late or [0]):.0f} ms late at {fig['flip_lateness_judged_at']} (target 20 ms), "
                    f"{fig['flips_never_published_during_storm']} displayed seconds never published"
                    + (f"; sent by the node up to {sniffed['flip_sent_by_node_ms'].get('max')} ms late, by the broker up to "
                       f"{sniffed['flip_sent_by_broker_to_subscriber_ms'].get('max')} ms" if sniffed else ""))
        blaster.stdin.close()
        blaster.wait(30)
        for c in (beat, replies):
            c.close()
    finally:
        if blaster and blaster.poll() is None:
            blaster.kill()
            blaster.wait()
        s.close()
        node.stop()
        broker.stop()


def storm_blast(spec):
    """The storm's clients (`--storm-blast PORT:TIMERS_TOPIC:CLIENTS:PER`, started by the storm
    scenario at the lowest priority): connects, prints `ready`, waits for `go`, has every client publish its
    QoS 1 pause/resume commands as fast as it can, prints `sent`, then keeps the connections
    until stdin closes (the broker's PUBACKs are read meanwhile)."""
    port, timers_topic, clients, per = spec.split(":")  # a topic of the node has no colon
    port, clients, per = int(port), int(clients), int(per)
    lower_this_thread()  # before any thread starts: they inherit it
    senders = [connect_retrying(port, f"rel-storm-{k}") for k in range(clients)]
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 1

    def blast(k):
        c = senders[k]
        topic = f"{timers_topic}/s{k}/cmd"
        for i in range(per):
            action = "pause" if i % 2 == 0 else "resume"
            c.publish(topic, '{"action":"%s","id":"c%d-%d"}' % (action, k, i))

    threads = [threading.Thread(target=blast, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("sent", flush=True)
    sys.stdin.read()  # until the scenario is done with the storm
    for c in senders:
        c.close()
    return 0
