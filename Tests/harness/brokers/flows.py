"""The core flows on one broker (or cluster): a real `pacer run` connected to the first member
(through a TCP proxy that can cut it), the displays on the last member. Every flow is measured,
never assumed: each returns (ok, text) and the table shows the text."""
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import time

from . import brokers, probe
from .clients import Display, Node, Proxy, state_of

# The flows in the order they run, with the table's wording.
FLOWS = [
    ("mqtt5", "MQTT 5 CONNECT (raw probe)"),
    ("version", "MQTT version the node chose by itself (no flag)"),
    ("online", "node online, live on the other member"),
    ("start", "start (QoS 1 command, reply on `<base>/reply`)"),
    ("events", "QoS 1 events (started, paused)"),
    ("flips", "per-second `remaining` flips"),
    ("pause", "pause -> paused state"),
    ("ret_exact_b", "retained state, fresh exact subscriber, other member"),
    ("ret_wild_b", "retained state, fresh wildcard subscriber, other member"),
    ("ret_exact_a", "retained state, fresh exact subscriber, node's member"),
    ("ret_wild_a", "retained state, fresh wildcard subscriber, node's member"),
    ("snapshot", "snapshot on connect (`list` + `time` replies)"),
    ("response_topic", "MQTT 5 response topic + correlation data"),
    ("max_packet", "MQTT 5 Maximum Packet Size (3 MiB command)"),
    ("lwt", "LWT `offline` when the node's link is cut"),
    ("reconnect_cmd", "QoS 1 command sent while the node reconnects"),
    ("websocket", "display over WebSockets (state)"),
    ("page", "wall page in Chromium, other member"),
]
# What Pacer needs of every broker: the matrix fails when one of these fails.
REQUIRED = ["version", "online", "start", "events", "flips", "pause", "snapshot", "lwt", "reconnect_cmd"]


def lateness(msgs, states):
    """Lateness (ms) of each live `remaining` flip: arrival minus the instant the value became
    true (ends_at_ms - value * 1000, from the latest running state before it)."""
    out = []
    for (at, topic, payload, retain, qos, props) in msgs:
        if retain or not topic.endswith("/remaining") or not payload.isdigit():
            continue
        tid = topic.split("/")[-2]
        st = states.get(tid)
        if st and st.get("ends_at_ms"):
            out.append(at - (st["ends_at_ms"] - int(payload) * 1000))
    return out


def page_check(ws_url, node_name, version, broker, st):
    """The wall page in Chromium (lighttpd serving examples/dashboard) on `ws_url`, showing
    timer t1: its digits must be the node's `remaining` (the timer is paused here)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    py = os.path.join(root, ".test-logs", "browser-venv", "bin", "python")
    if not os.path.exists(py) or not shutil.which("lighttpd") or not shutil.which("chromium"):
        return (True, "not run (needs lighttpd, chromium and .test-logs/browser-venv from Tests/extra/browser)")
    work = tempfile.mkdtemp(prefix="pacer-brokers-web.")
    port = brokers.free_port()
    conf = os.path.join(work, "lighttpd.conf")
    with open(conf, "w") as f:
        f.write(f'server.document-root = "{os.path.join(root, "examples", "dashboard")}"\nserver.bind = "127.0.0.1"\n'
                f'server.port = {port}\nmimetype.assign = (".html" => "text/html", ".js" => "text/javascript", ".css" => "text/css", '
                f'".svg" => "image/svg+xml", ".webmanifest" => "application/manifest+json", ".png" => "image/png")\n')
    web = subprocess.Popen(["lighttpd", "-D", "-f", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        brokers.wait_port(port, 10, web, "lighttpd")
        q = {"broker": ws_url, "node": node_name, "timer": "t1"}
        # no ?mqtt=: the page negotiates the version as the node does
        if broker.username:
            q.update(user=broker.username, pass_=broker.password)
        url = f"http://127.0.0.1:{port}/index.html?" + "&".join(f"{k.rstrip('_')}={v}" for k, v in q.items())
        out = subprocess.run([py, os.path.join(os.path.dirname(os.path.abspath(__file__)), "page_check.py"), url, "30"],
                             capture_output=True, text=True, timeout=120)
        try:
            got = json.loads(out.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return (False, "no: " + (out.stderr.strip().splitlines() or ["the page check failed"])[-1][:120])
        if "error" in got or not got.get("timers"):
            return (False, "no: " + got.get("error", "no timer shown in 30 s"))
        want = fmt(st["remaining"]) if st and st.get("status") == "paused" else None
        ok = want is not None and got["digits"] == want and got["phase"] == "paused"
        how = " (from a `list` snapshot: no retained state on this member)" if got.get("via_list") else ""
        return (ok, f"yes, shows {got['digits']} {got['phase']}{how}" if ok else f"shows {got['digits']} {got['phase']}, the node {want}")
    finally:
        web.terminate()
        web.wait()
        shutil.rmtree(work, ignore_errors=True)


def fmt(secs):
    h, m, s = secs // 3600, secs % 3600 // 60, secs % 60
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def run(broker, pacer_bin, node_id=None, log=print):
    """Runs every flow; returns {flow: (ok, text)}."""
    r = {}
    a, b = broker.members[0], broker.members[-1]
    cred = dict(username=broker.username, password=broker.password)
    base = f"pacer/{node_id or 'room-' + secrets.token_hex(3)}"
    node_name = base.split("/", 1)[1]
    verdict, detail = probe.mqtt5_connect(a.port, **cred)
    r["mqtt5"] = (True, f"{verdict}: {detail}")
    version = "5" if verdict == "accepts" else "3.1.1"   # for the Python displays
    work = tempfile.mkdtemp(prefix="pacer-brokers-node.")
    proxy = Proxy(a.port)
    disp = Display(b.port, version, name="display", **cred)
    node = None
    extra = []
    try:
        disp.subscribe(base + "/#", 1)
        # `pacer run` as a user runs it: no --mqtt-version (broker.mqtt_version auto)
        node = Node(pacer_bin, proxy.port, node_name, os.path.join(work, "data"), None, log=os.path.join(work, "node.log"), **cred)
        m = disp.wait(lambda m: m[1] == base + "/status" and m[2] == "online", 30)
        r["online"] = (m is not None, "yes" if m else "no `online` within 30 s")
        said = None
        for _ in range(50):   # logged as connect() returns, maybe just after `online` went out
            said = next((line.split("speaking ", 1)[1] for line in node.tail(200).splitlines() if "speaking MQTT" in line), None)
            if said or not m:
                break
            time.sleep(0.1)
        chose = said.split(":")[0].removeprefix("MQTT ") if said else None
        reason = said.split(": ", 1)[1].split(";")[0] if said and ": " in said else ""
        r["version"] = (chose == version, f"{chose} ({reason})" if chose == "3.1.1" else (chose or "not logged")) if chose == version \
            else (False, f"{chose or 'none logged'}, the raw probe says {version}")
        # info says whether the node honours response topics: only over MQTT 5.
        info = disp.wait(lambda m: m[1] == base + "/info", 10)
        caps = json.loads(info[2]).get("capabilities", []) if info else []
        if r["version"][0] and ("mqtt5_response_topic" in caps) != (version == "5"):
            r["version"] = (False, f"{r['version'][1]}, but info's capabilities {'list' if 'mqtt5_response_topic' in caps else 'lack'} mqtt5_response_topic")
        if not m:
            log(node.tail())
            return r

        # start, from the display's member
        i = disp.mark()
        disp.publish(base + "/cmd", json.dumps({"action": "start", "timer": "t1", "id": "m-start",
                                                "spec": {"kind": "countdown", "duration": "10m"}}), qos=1)
        reply = disp.wait(lambda m: m[1] == base + "/reply" and '"m-start"' in m[2], 15)
        run_state = disp.wait(lambda m: m[1] == base + "/timers/t1/state" and not m[3] and '"running"' in m[2], 15)
        ok = reply is not None and '"ok":true' in reply[2] and run_state is not None
        r["start"] = (ok, "yes" if ok else f"reply {'yes' if reply else 'no'}, running state {'yes' if run_state else 'no'}")

        # per-second flips, live on the other member, timed against ends_at_ms
        time.sleep(4.2)
        states = {"t1": state_of(run_state)} if run_state else {}
        flips = [m for m in disp.since(i) if m[1] == base + "/timers/t1/remaining" and not m[3]]
        late = sorted(lateness(flips, states))
        ok = len(flips) >= 3 and all(x >= -5 for x in late)
        r["flips"] = (ok, f"{len(flips)} in 4 s, late {late[len(late) // 2]:.1f}/{late[-1]:.1f} ms (p50/max)" if late else f"{len(flips)} flips")

        # pause
        disp.publish(base + "/timers/t1/cmd", json.dumps({"action": "pause", "id": "m-pause"}), qos=1)
        paused = disp.wait(lambda m: m[1] == base + "/timers/t1/state" and not m[3] and '"paused"' in m[2], 15)
        r["pause"] = (paused is not None, "yes" if paused else "no paused state within 15 s")
        ev = disp.wait(lambda m: m[1] == base + "/timers/t1/event" and '"paused"' in m[2], 10)
        started = disp.wait(lambda m: m[1] == base + "/timers/t1/event" and '"started"' in m[2], 1)
        ok = ev is not None and started is not None and ev[4] == 1 and started[4] == 1
        r["events"] = (ok, "yes, QoS 1" if ok else f"started {started[4] if started else 'missing'}, paused {ev[4] if ev else 'missing'} (QoS)")
        revision = state_of(paused)["revision"] if paused else None

        # retained state to fresh subscribers, on each member, exact and wildcard
        for key, member, topic in (("ret_exact_b", b, base + "/timers/t1/state"), ("ret_wild_b", b, base + "/timers/+/state"),
                                   ("ret_exact_a", a, base + "/timers/t1/state"), ("ret_wild_a", a, base + "/timers/+/state")):
            fresh = Display(member.port, version, name="fresh", **cred)
            extra.append(fresh)
            fresh.subscribe(topic, 1, settle=0)
            m = fresh.wait(lambda m: m[3] and m[1] == base + "/timers/t1/state", 5)
            st = state_of(m) if m else None
            ok = st is not None and st.get("revision") == revision
            r[key] = (ok, "yes" if ok else ("stale (revision %s, not %s)" % (st.get("revision"), revision) if st else "none in 5 s"))
            fresh.close()

        # the workaround for a broker without retained state across members: ask the node
        fresh = Display(b.port, version, name="snap", **cred)
        extra.append(fresh)
        fresh.subscribe(base + "/reply", 1, settle=0.5)
        fresh.publish(base + "/cmd", json.dumps({"action": "list", "id": "m-list"}), qos=1)
        fresh.publish(base + "/time", json.dumps({"id": "m-time"}), qos=1)
        lst = fresh.wait(lambda m: m[1] == base + "/reply" and '"m-list"' in m[2], 10)
        tm = fresh.wait(lambda m: m[1] == base + "/reply" and '"m-time"' in m[2], 10)
        ok = lst is not None and '"t1"' in lst[2] and '"paused"' in lst[2] and tm is not None and '"now_ms"' in tm[2]
        r["snapshot"] = (ok, "yes" if ok else f"list {'yes' if lst else 'no'}, time {'yes' if tm else 'no'}")
        fresh.close()

        # MQTT 5: the reply on the request's response topic with its correlation data
        if version == "5":
            rt = base + "/reply/disp-" + secrets.token_hex(3)
            disp.subscribe(rt, 1, settle=0.5)
            disp.publish(base + "/cmd", json.dumps({"action": "time", "id": "m-rt"}), qos=1, response_topic=rt, correlation=b"corr-42")
            m = disp.wait(lambda m: m[1] == rt and '"m-rt"' in m[2], 10)
            ok = m is not None and m[5].get("CorrelationData") == b"corr-42"
            r["response_topic"] = (ok, "yes" if ok else ("reply without correlation data" if m else "no reply on the response topic"))

            i = disp.mark()
            disp.publish(base + "/cmd", "x" * (3 * 1024 * 1024), qos=1)
            time.sleep(2)
            disp.publish(base + "/cmd", json.dumps({"action": "time", "id": "m-after-big"}), qos=1)
            m = disp.wait(lambda m: m[1] == base + "/reply" and '"m-after-big"' in m[2], 15)
            offline = [x for x in disp.since(i) if x[1] == base + "/status" and x[2] == "offline"]
            big_reply = [x for x in disp.since(i) if x[1] == base + "/reply" and "payload_too_large" in x[2]]
            if m and not offline and not big_reply:
                r["max_packet"] = (True, "yes: the broker dropped it, the node stayed connected")
            elif m and not offline:
                r["max_packet"] = (True, "no: the broker delivered it (the node refused it, `payload_too_large`)")
            else:
                r["max_packet"] = (False, f"node {'went offline' if offline else 'did not answer after it'}")
        else:
            r["response_topic"] = (True, "n/a (3.1.1)")
            r["max_packet"] = (True, "n/a (3.1.1)")

        # last will, then a command sent while the node is away and reconnecting
        i = disp.mark()
        proxy.cut(4)
        off = disp.wait(lambda m: m[1] == base + "/status" and m[2] == "offline", 30, start=i)
        r["lwt"] = (off is not None, "yes" if off else "no `offline` within 30 s")
        disp.publish(base + "/timers/t1/cmd", json.dumps({"action": "resume", "id": "m-resume"}), qos=1)
        back = disp.wait(lambda m: m[1] == base + "/status" and m[2] == "online", 60, start=i)
        resumed = disp.wait(lambda m: m[1] == base + "/reply" and '"m-resume"' in m[2], 8)
        how = "yes, applied after the reconnect"
        if back and not resumed:
            # what a careful sender does (docs/API.md): the same command, same id, again
            disp.publish(base + "/timers/t1/cmd", json.dumps({"action": "resume", "id": "m-resume"}), qos=1)
            resumed = disp.wait(lambda m: m[1] == base + "/reply" and '"m-resume"' in m[2], 15)
            how = "only when resent: " + ("the node ignored the queued copy, delivered with the retain flag"
                                          if "ignored a retained command" in node.tail(60) else "the queued copy never came")
        running = disp.wait(lambda m: m[1] == base + "/timers/t1/state" and '"running"' in m[2], 5, start=i)
        ok = back is not None and resumed is not None and '"ok":true' in resumed[2] and running is not None
        r["reconnect_cmd"] = (ok and how.startswith("yes"), how if ok else
                              f"online again {'yes' if back else 'no'}, reply {'yes' if resumed else 'no'}, running {'yes' if running else 'no'}")

        # a display over WebSockets on the other member
        ws_mark = disp.mark()
        if b.ws_url:
            try:
                w = Display(b.port, version, ws_url=b.ws_url, name="ws", **cred)
                extra.append(w)
                w.subscribe(base + "/timers/+/state", 1, settle=0)
                w.subscribe(base + "/timers/t1/state", 1, settle=1.5)  # subscribed before the live state comes
                ws_mark = disp.mark()
                disp.publish(base + "/timers/t1/cmd", json.dumps({"action": "pause", "id": "m-ws"}), qos=1)
                m = w.wait(lambda m: m[1] == base + "/timers/t1/state", 10)
                r["websocket"] = (m is not None, "yes (path /" + b.ws_url.split("/", 3)[-1] + ")" if m else "no state over WebSockets")
            except Exception as e:  # noqa: BLE001 — the table says what failed
                r["websocket"] = (False, f"no: {e}")
        else:
            r["websocket"] = (True, "n/a (no WebSocket listener)")
        if b.ws_url:
            paused = disp.wait(lambda m: m[1] == base + "/timers/t1/state" and '"paused"' in m[2], 10, start=ws_mark)
            r["page"] = page_check(b.ws_url, node_name, version, broker, state_of(paused) if paused else None)
        return r
    finally:
        for c in extra:
            c.close()
        disp.close()
        if node:
            node.stop()
            r["_node_log"] = node.tail(40)
        proxy.close()
        shutil.rmtree(work, ignore_errors=True)
