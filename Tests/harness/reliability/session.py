"""Talking to a node as its users do: Session (a client on the node's whole tree that sends
commands and matches their replies), and what the published `remaining` flips of a running
timer say: seconds never published (skipped_flips) and each flip's lateness (flip_lateness)."""
import json
import os
import random

from .common import json_id, parse_json
from .mqtt import connect_retrying


class Session:
    """A client on the node's whole tree (`base/#`) that sends commands and matches replies."""

    def __init__(self, node, port, name="rel-cmd", topics=None):
        self.node = node
        self.client = connect_retrying(port, f"{name}-{os.getpid()}-{random.randrange(1 << 30)}")
        for topic in topics or [node.topic("#")]:  # topics: e.g. not the command topics (hostile's 16 MiB payloads)
            self.client.subscribe(topic)
        self.counter = 0

    def wait_online(self, since=0, timeout=30):
        status = self.node.topic("status")
        self.client.wait_for(lambda: any(m[1] == status and m[2] == b"online" for m in self.client.since(since)),
                             timeout, "the node's status 'online'")

    def replies(self, since, rid):
        return [json.loads(m[2]) for m in self.client.since(since, self.node.topic("reply"))
                if json_id(m[2]) == rid]

    def send(self, command, timer=None, timeout=10):
        """Publishes a JSON command with a fresh id (node topic, or the timer's) and returns its reply."""
        self.counter += 1
        command = dict(command)
        command.setdefault("id", f"q{self.counter}-{random.randrange(1 << 30)}")
        topic = self.node.topic("timers", timer, "cmd") if timer else self.node.topic("cmd")
        index = self.client.count()
        self.client.publish(topic, json.dumps(command))
        self.client.wait_for(lambda: self.replies(index, command["id"]), timeout, f"the reply to {command}")
        return self.replies(index, command["id"])[0]

    def close(self):
        self.client.close()


def skipped_flips(messages, node, timer, after_ms=0, before_ms=float("inf")):
    """How many displayed seconds of a counting-down timer were never published (the value
    jumped by more than 1) between after_ms and before_ms (arrival times)."""
    remaining_t = node.topic("timers", timer, "remaining")
    last, skipped = None, 0
    for t, topic, payload, retain in messages:
        if topic == remaining_t and not retain and payload:
            value = int(payload)
            if last is not None and after_ms <= t <= before_ms and 1 < last - value < 60:
                skipped += last - value - 1
            last = value
    return skipped


def flip_lateness(messages, node, timer, after_ms=0, before_ms=float("inf")):
    """Lateness (arrival - due, ms) of every `remaining` flip of a running countdown-like timer:
    a flip to r is due at ends_at_ms - r*1000 of the state it belongs to. Republishes of an
    unchanged value (reconnects) are not flips.

    That state is the latest one before the flip, except around a change: the plain topics
    have a connection of their own (publish.plain_connection: separate), so the value a change
    published may arrive just before that change's state; a flip whose value the next state
    (arriving within 500 ms) shows, and the state before it does not, belongs to the next one."""
    state_t, remaining_t = node.topic("timers", timer, "state"), node.topic("timers", timer, "remaining")
    messages = list(messages)
    state, last, out = None, None, []
    for i, (t, topic, payload, retain) in enumerate(messages):
        if topic == state_t:
            state = parse_json(payload)
        elif topic == remaining_t and not retain and payload:
            value = int(payload)
            owner = state
            nxt = None
            for m in messages[i + 1:]:
                if m[0] - t > 500:
                    break
                if m[1] == state_t:
                    nxt = parse_json(m[2])
                    break
            if nxt and nxt.get("remaining") == value and (state or {}).get("remaining") != value:
                owner = nxt
            ends_at = owner.get("ends_at_ms") if owner and owner.get("status") == "running" else None
            if ends_at is not None and value != last:
                due = ends_at - value * 1000
                if after_ms <= due <= before_ms:
                    out.append(t - due)
            last = value
    return out
