"""The stuck scenario: a QoS 1 subscriber on the node's whole tree that stops reading (a tiny
receive buffer, no reader), with the broker's max_queued_messages 1000, while eight interval
timers run: the node's flips stay on time and its RSS does not grow."""
import json
import os
import socket
import struct
import time

from .common import now_ms, summary
from .mqtt import Client, connect_retrying, encode_packet, encode_string
from .processes import Broker, Node, proc_rss_kb
from .session import Session, flip_lateness


def scenario_stuck(suite):
    dur = suite.args.stuck_seconds
    suite.say(f"stuck: a QoS 1 subscriber that stops reading, broker max_queued_messages 1000, {dur} s")
    d = suite.dir("stuck")
    broker = Broker(os.path.join(d, "broker"), persistence=False, extra=["max_queued_messages 1000", "max_inflight_messages 20"])
    broker.start()
    timers = "".join(f"  - {{id: t{k}, spec: {{kind: interval, work: 3s, rest: 2s, rounds: 999}}}}\n" for k in range(8))
    node = Node(suite.pacer, os.path.join(d, "node"), broker.port, "timers:\n" + timers)
    node.start()
    s = Session(node, broker.port)
    try:
        s.wait_online()
        for k in range(8):
            s.send({"action": "start"}, timer=f"t{k}")
        stuck = Client(broker.port, "rel-stuck", clean=False, reader=False)
        stuck.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck._send(encode_packet(0x82, struct.pack("!H", 1) + encode_string(node.topic("#")) + bytes([1])))
        watcher = connect_retrying(broker.port, "rel-stuck-watch")
        watcher.subscribe(node.topic("timers", "t0", "#"))
        rss = [proc_rss_kb(node.pid)]
        end = time.monotonic() + dur
        while time.monotonic() < end:
            # Commands keep the node publishing beyond its flips.
            s.send({"action": "time"})
            time.sleep(1)
            rss.append(proc_rss_kb(node.pid))
        late = flip_lateness(watcher.since(0), node, "t0", after_ms=now_ms() - dur * 1000 + 2000)
        broker_rss = proc_rss_kb(broker.proc.pid)
        fig = {"seconds": dur, "node_rss_kb_first": rss[0], "node_rss_kb_last": rss[-1], "node_rss_kb_max": max(x for x in rss if x),
               "broker_rss_kb": broker_rss, "flip_lateness_ms": summary(late)}
        suite.figures["stuck"] = fig
        suite.say(f"  {json.dumps(fig)}")
        suite.check("stuck", late and max(late) < 250, f"flips late while a subscriber is stuck: {summary(late)}")
        suite.check("stuck", rss[-1] - rss[1] < 20_000, f"node RSS grew from {rss[1]} to {rss[-1]} kB")
        stuck.sock.close()
        watcher.close()
    finally:
        s.close()
        node.stop()
        broker.stop()
