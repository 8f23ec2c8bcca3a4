#!/usr/bin/env python3
"""The bridge behind the radio against a real broker: a fake strap source replays recorded
notifications into the real `Bridge` and `MqttLink`, which publish to a mosquitto started
here on 127.0.0.1 (a free port, stopped by its PID); a subscriber checks what arrives. With
PACER_BIN set, a real Pacer node reads the bridge's topic and shows the heart rate.

Needs paho-mqtt (requirements.txt) and mosquitto. Run: cd examples/hr-bridge && python -m unittest test_bridge
"""
import asyncio
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import paho.mqtt.client as mqtt  # noqa: E402
except ImportError:  # plain `python3 -m unittest` runs the decoder's tests and says why not these
    raise unittest.SkipTest("needs paho-mqtt: run with the venv's python (README.md, Tests)") from None

from bridge import Bridge, BrokerSettings, MqttLink, Strap  # noqa: E402

# Notifications as straps send them (see test_decode.py for what each one holds).
ALICE_72 = bytes.fromhex("16 48 2c 03 1f 03")         # 72 bpm, contact, RR 812 and 799 /1024 s
ALICE_140 = bytes.fromhex("1e 8c 34 12 b7 01 b6 01")  # 140 bpm, contact, 4660 kJ, RR 439 and 438
NO_CONTACT = bytes.fromhex("04 00")                   # contact supported, not detected, 0 bpm
NO_CONTACT_LAST = bytes.fromhex("14 4b 00 03")        # not detected, but the last value (75) sent
BROKEN = bytes.fromhex("16")                          # flags only
ALICE_90 = bytes.fromhex("06 5a")                     # 90 bpm, contact again
BOB_180 = bytes.fromhex("11 b4 00 55 01")             # 16-bit 180 bpm, no contact feature
ZERO = bytes.fromhex("00 00")                         # no contact feature, 0 bpm: no reading

ALICE = Strap(id="alice", address="C8:3A:1B:2C:3D:4E", name="Polar H10 1A2B3C4D")
BOB = Strap(id="bob", address="F1:02:03:04:05:06", name="TICKR 1234")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Mosquitto:
    """A real mosquitto on 127.0.0.1, stopped by its PID."""

    def __init__(self, work, port=None, passwords=None, extra=()):
        self.port = port or free_port()
        self.conf = os.path.join(work, f"mosquitto-{self.port}.conf")
        lines = [f"listener {self.port} 127.0.0.1", *extra]
        if passwords:
            pwfile = os.path.join(work, "passwords")
            open(pwfile, "w").close()
            for user, password in passwords.items():
                subprocess.run(["mosquitto_passwd", "-b", pwfile, user, password], check=True)
            # Started as root, mosquitto reads its files as the user `mosquitto`.
            os.chmod(work, 0o755)
            os.chmod(pwfile, 0o644)
            lines += ["allow_anonymous false", f"password_file {pwfile}"]
        else:
            lines.append("allow_anonymous true")
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.log = os.path.join(work, f"mosquitto-{self.port}.log")
        self.proc = None

    def start(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(["mosquitto", "-c", self.conf], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"mosquitto exited with {self.proc.returncode} (see {self.log})")
                time.sleep(0.05)
        raise RuntimeError("mosquitto did not listen within 5 s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class Subscriber:
    """Collects (topic, payload, qos, retain) of every message on `topics`, subscribed at QoS 2
    so that a message's QoS is the one it was published with."""

    def __init__(self, port, topics):
        self.messages = queue.Queue()
        self.seen = []  # every message, whatever `take` skipped
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"hr-test-sub-{os.getpid()}-{time.monotonic_ns()}")
        subscribed = queue.Queue()
        self.client.on_connect = lambda c, u, f, rc, p: c.subscribe([(t, 2) for t in topics])
        self.client.on_subscribe = lambda c, u, mid, rcs, p: subscribed.put(True)
        self.client.on_message = self._message
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        subscribed.get(timeout=5)

    def _message(self, client, userdata, m):
        item = (m.topic, m.payload.decode(), m.qos, bool(m.retain))
        self.seen.append(item)
        self.messages.put(item)

    def take(self, count, timeout=5.0, topic=None):
        """The next `count` messages (on `topic` only, if given), in order of arrival."""
        got, deadline = [], time.monotonic() + timeout
        while len(got) < count:
            try:
                m = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"expected {count} messages{' on ' + topic if topic else ''}, got {got}") from None
            if topic is None or m[0] == topic:
                got.append(m)
        return got

    def drain(self, seconds=0.3):
        time.sleep(seconds)
        out = []
        while not self.messages.empty():
            out.append(self.messages.get())
        return out

    def stop(self):
        self.client.disconnect()
        self.client.loop_stop()


class FakeStrapSource:
    """A strap source with no radio: replays (event, strap, data) as BleSource reports them."""

    def __init__(self, script, gap=0.02):
        self.script, self.gap = script, gap

    async def run(self, sink):
        for event, strap, data in self.script:
            if event == "connected":
                sink.strap_connected(strap, data)
            elif event == "notify":
                sink.strap_notification(strap, data)
            elif event == "lost":
                sink.strap_lost(strap, data)
            await asyncio.sleep(self.gap)


def wait_until(predicate, timeout=5.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class BrokerTestCase(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="hr-bridge-test-")
        self.addCleanup(shutil.rmtree, self.work, True)
        self.broker = Mosquitto(self.work).start()
        self.stoppers = []

    def tearDown(self):
        for stop in reversed(self.stoppers):
            stop()
        self.broker.stop()

    def bridge(self, status="hr-bridge/test", **kwargs):
        link = MqttLink(BrokerSettings(host="127.0.0.1", port=self.broker.port, client_id=f"hr-bridge-test-{time.monotonic_ns()}"), status)
        bridge = Bridge(link, status_topic=status, **kwargs)
        link.on_connected = bridge.republish
        link.start()
        self.stoppers.append(link.stop)
        self.assertTrue(link.connected.wait(5), "the bridge did not connect to the broker")
        return link, bridge

    def subscriber(self, *topics):
        sub = Subscriber(self.broker.port, topics)
        self.stoppers.append(sub.stop)
        return sub


class PublishingTests(BrokerTestCase):
    def test_readings_states_qos_and_retain(self):
        sub = self.subscriber("hr/#", "hr-bridge/test/#")
        link, bridge = self.bridge()
        self.assertEqual(sub.take(1, topic="hr-bridge/test/status")[0][1:3], ("online", 1))
        script = [
            ("connected", ALICE, "chest"), ("notify", ALICE, ALICE_72), ("notify", ALICE, ALICE_140),
            ("notify", ALICE, NO_CONTACT), ("notify", ALICE, NO_CONTACT_LAST), ("notify", ALICE, BROKEN),
            ("notify", ALICE, ALICE_90),
            ("connected", BOB, None), ("notify", BOB, BOB_180), ("notify", BOB, ZERO),
            ("lost", BOB, "the strap disconnected"),
        ]
        with self.assertLogs("hr-bridge", "INFO") as logs:
            asyncio.run(FakeStrapSource(script).run(bridge))
            alice = sub.take(3, topic="hr/alice")
            bob = sub.take(1, topic="hr/bob")
        rest = sub.drain()

        # Readings: QoS 0, not retained, only when the strap has one (no 0, no contact-less value).
        self.assertEqual([(t, q, r) for t, _, q, r in alice + bob], [("hr/alice", 0, False)] * 3 + [("hr/bob", 0, False)])
        readings = [json.loads(p) for _, p, _, _ in alice]
        self.assertEqual([r["bpm"] for r in readings], [72, 140, 90])
        self.assertEqual(readings[0]["rr_ms"], [round(812 * 1000 / 1024, 1), round(799 * 1000 / 1024, 1)])
        self.assertEqual(readings[0]["rr_ms"], [793.0, 780.3])
        self.assertEqual((readings[1]["energy_kj"], readings[0]["energy_kj"]), (4660, None))
        self.assertEqual([r["contact"] for r in readings], [True, True, True])
        now_ms = time.time() * 1000
        for r in readings:
            self.assertLess(abs(r["at_ms"] - now_ms), 10_000)
            self.assertEqual(set(r), {"bpm", "contact", "rr_ms", "energy_kj", "at_ms"})
        b = json.loads(bob[0][1])
        self.assertEqual((b["bpm"], b["contact"], b["rr_ms"]), (180, None, [333.0]))
        self.assertFalse([m for m in rest if m[0].startswith("hr/")], "nothing else on the reading topics")

        # The malformed notification was logged with its reason.
        self.assertTrue(any("alice: notification 1 ignored: truncated" in line for line in logs.output), logs.output)

        # States: retained and QoS 1; a late subscriber gets each strap's last one and no reading.
        late = self.subscriber("hr/#", "hr-bridge/test/#")
        retained = {t: (json.loads(p) if t.endswith(("alice", "bob")) else p, q, r) for t, p, q, r in late.drain(0.5)}
        self.assertEqual(set(retained), {"hr-bridge/test/status", "hr-bridge/test/straps/alice", "hr-bridge/test/straps/bob"})
        self.assertTrue(all(r and q == 1 for _, q, r in retained.values()), retained)
        self.assertEqual(retained["hr-bridge/test/status"][0], "online")
        a = retained["hr-bridge/test/straps/alice"][0]
        self.assertEqual((a["state"], a["contact"], a["location"], a["topic"], a["address"], a["name"]),
                         ("connected", True, "chest", "hr/alice", ALICE.address, ALICE.name))
        bs = retained["hr-bridge/test/straps/bob"][0]
        self.assertEqual((bs["state"], bs["reason"], bs["contact"]), ("lost", "the strap disconnected", None))

        # While alice had no contact her state said so: connected (None), True, False, True.
        alice_states = [json.loads(p)["contact"] for t, p, _, _ in sub.seen if t == "hr-bridge/test/straps/alice"]
        self.assertEqual(alice_states, [None, True, False, True])

        # Stopping publishes offline (retained), and so does the last will when the bridge dies.
        link.stop()
        self.assertEqual(Subscriber(self.broker.port, ["hr-bridge/test/status"]).take(1)[0][1:], ("offline", 1, True))

    def test_plain_format(self):
        sub = self.subscriber("hr/#")
        _, bridge = self.bridge(payload_format="plain", prefix="hr")
        asyncio.run(FakeStrapSource([("connected", ALICE, None), ("notify", ALICE, ALICE_72), ("notify", ALICE, NO_CONTACT),
                                     ("notify", BOB, BOB_180)]).run(bridge))
        self.assertEqual([(t, p) for t, p, _, _ in sub.take(2)], [("hr/alice", "72"), ("hr/bob", "180")])

    def test_broker_restart(self):
        _, bridge = self.bridge()
        link = bridge.publisher
        asyncio.run(FakeStrapSource([("connected", ALICE, "chest"), ("notify", ALICE, ALICE_72)]).run(bridge))
        self.broker.stop()
        wait_until(lambda: not link.connected.is_set(), what="the bridge to notice the broker is gone")
        # While the broker is down a reading is dropped, not queued to arrive stale later.
        bridge.strap_notification(ALICE, ALICE_140)
        self.broker.start()  # same port, no persistence: the retained states are gone
        self.assertTrue(link.connected.wait(40), "the bridge did not reconnect")
        sub = self.subscriber("hr/#", "hr-bridge/test/#")
        got = {t: p for t, p, _, _ in sub.drain(0.5)}
        self.assertEqual(got.get("hr-bridge/test/status"), "online")
        self.assertEqual(json.loads(got["hr-bridge/test/straps/alice"])["state"], "connected")
        self.assertNotIn("hr/alice", got)
        bridge.strap_notification(ALICE, ALICE_90)
        self.assertEqual(json.loads(sub.take(1, topic="hr/alice")[0][1])["bpm"], 90)


class RefusedTests(unittest.TestCase):
    def test_wrong_password_is_reported_and_retried(self):
        work = tempfile.mkdtemp(prefix="hr-bridge-test-")
        broker = Mosquitto(work, passwords={"bridge": "right"})
        try:
            broker.start()
            settings = BrokerSettings.from_url(f"mqtt://bridge:wrong@127.0.0.1:{broker.port}")
            link = MqttLink(settings, "hr-bridge/test")
            with self.assertLogs("hr-bridge", "ERROR") as logs:
                link.start()
                wait_until(lambda: logs.output, what="the refusal to be logged")
            link.stop()
            self.assertIn("refused the connection: Not authorized; check --username and the password", logs.output[0])
            self.assertFalse(link.connected.is_set())
        finally:
            broker.stop()
            shutil.rmtree(work, ignore_errors=True)


class ConnectionTests(unittest.TestCase):
    """mqtts:// with a CA file and a login; the errors a person sees when the broker cannot be used."""

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="hr-bridge-test-")
        self.addCleanup(shutil.rmtree, self.work, True)

    def link(self, url, **overrides):
        link = MqttLink(BrokerSettings.from_url(url, client_id=f"hr-bridge-test-{time.monotonic_ns()}", **overrides), "hr-bridge/test")
        self.addCleanup(link.stop)
        return link

    def first_error(self, link):
        with self.assertLogs("hr-bridge", "ERROR") as logs:
            link.start()
            wait_until(lambda: logs.output, what="an error to be logged")
        self.assertFalse(link.connected.is_set())
        return logs.output[0]

    def test_tls_with_ca_file_and_login(self):
        key, crt = os.path.join(self.work, "server.key"), os.path.join(self.work, "server.crt")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", crt], check=True, capture_output=True)
        os.chmod(key, 0o644)
        tls_port = free_port()
        broker = Mosquitto(self.work, passwords={"bridge": "s3cret"},
                           extra=[f"listener {tls_port} 127.0.0.1", f"certfile {crt}", f"keyfile {key}"]).start()
        self.addCleanup(broker.stop)
        sub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        sub.username_pw_set("bridge", "s3cret")
        got = queue.Queue()
        sub.on_connect = lambda c, u, f, rc, p: c.subscribe("hr/#", 1)
        sub.on_message = lambda c, u, m: got.put((m.topic, m.payload.decode()))
        sub.connect("127.0.0.1", broker.port)
        sub.loop_start()
        self.addCleanup(sub.loop_stop)
        link = self.link(f"mqtts://bridge:s3cret@127.0.0.1:{tls_port}", ca_file=crt)
        link.start()
        self.assertTrue(link.connected.wait(10), "no TLS connection with the broker's CA and the right login")
        bridge = Bridge(link, payload_format="plain")
        time.sleep(0.3)  # the subscriber's SUBSCRIBE
        bridge.strap_notification(ALICE, ALICE_72)
        self.assertEqual(got.get(timeout=5), ("hr/alice", "72"))
        # Without the broker's CA (the system's CAs) the handshake fails, and says what to do.
        text = self.first_error(self.link(f"mqtts://bridge:s3cret@127.0.0.1:{tls_port}"))
        self.assertIn(f"the TLS handshake with the broker at mqtts://127.0.0.1:{tls_port} failed (self-signed certificate)", text)
        self.assertIn("--ca-file", text)

    def test_nothing_listening(self):
        port = free_port()
        text = self.first_error(self.link(f"mqtt://127.0.0.1:{port}"))
        self.assertIn(f"nothing listens at mqtt://127.0.0.1:{port}: is mosquitto running there", text)


@unittest.skipUnless(os.environ.get("PACER_BIN"), "PACER_BIN is not set: no Pacer node to read the bridge")
class PacerNodeTests(BrokerTestCase):
    """A real Pacer node with a heart-rate source on the bridge's topic."""

    def test_node_shows_the_strap_and_blanks_it_without_contact(self):
        pacer = os.environ["PACER_BIN"]
        node = f"hrb{os.getpid()}"
        base = f"pacer-hr-bridge-test/{node}"
        config = os.path.join(self.work, "pacer.yaml")
        with open(config, "w") as f:
            f.write("heart_rate:\n  max_hr: 190\n  stale_after: 2s\n"
                    "  sources:\n    - name: alice\n      topic: hr/alice\n      field: bpm\n")
        conn = ["--broker", f"mqtt://127.0.0.1:{self.broker.port}", "--node", node, "--base-topic", base]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PACER_") or k == "PACER_BIN"}
        with open(os.path.join(self.work, "node.log"), "wb") as log:
            proc = subprocess.Popen([pacer, "run", "--config", config, "--data-dir", os.path.join(self.work, "data"), *conn],
                                    stdout=log, stderr=subprocess.STDOUT, env=env)

        def stop_node():
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.stoppers.append(stop_node)
        # The node answers once it is subscribed (a loaded machine may take seconds).
        deadline = time.monotonic() + 30
        while subprocess.run([pacer, "list", *conn, "--timeout", "2"], capture_output=True, env=env, timeout=20).returncode != 0:
            self.assertLess(time.monotonic(), deadline, f"the node did not answer within 30 s (log: {self.work}/node.log)")
            self.assertIsNone(proc.poll(), "the node exited")
            time.sleep(0.2)
        started = subprocess.run([pacer, "start", "main", *conn, "--work", "5m", "--rest", "1m", "--rounds", "4", "--timeout", "20"],
                                 capture_output=True, text=True, env=env, timeout=30)
        self.assertEqual(started.returncode, 0, started.stdout + started.stderr)

        sub = self.subscriber(f"{base}/timers/main/hr", f"{base}/timers/main/state")
        _, bridge = self.bridge()
        sub.drain(0.3)
        asyncio.run(FakeStrapSource([("connected", ALICE, "chest"), ("notify", ALICE, ALICE_140)]).run(bridge))

        def latest(topic, timeout):
            """The payloads arriving on `topic`, in order, for at most `timeout` seconds."""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                try:
                    t, p, _, _ = sub.messages.get(timeout=0.1)
                except queue.Empty:
                    continue
                if t == topic:
                    yield p

        hr_topic, state_topic = f"{base}/timers/main/hr", f"{base}/timers/main/state"
        shown = next((p for p in latest(hr_topic, 10) if p == "140"), None)
        self.assertEqual(shown, "140", "the node's hr topic did not show the strap's 140 bpm")
        # The retained state carries it too, with its zone (140 of 190: 73.7 %, zone 3).
        state = json.loads(Subscriber(self.broker.port, [state_topic]).take(1)[0][1])
        self.assertEqual((state["hr"], state["hr_zone"]), (140, 3))

        # The strap loses contact: the bridge sends nothing, the node blanks hr when stale (2 s).
        contact_lost = time.monotonic()
        for _ in range(3):
            bridge.strap_notification(ALICE, NO_CONTACT_LAST)
            time.sleep(0.2)
        blank = next((p for p in latest(hr_topic, 10) if p == ""), None)
        self.assertEqual(blank, "", "the node's hr did not go blank after the strap lost contact")
        self.assertGreaterEqual(time.monotonic() - contact_lost, 1.5)
        state = json.loads(Subscriber(self.broker.port, [state_topic]).take(1)[0][1])
        self.assertIsNone(state["hr"])

        # Contact again: the node shows it again.
        bridge.strap_notification(ALICE, ALICE_90)
        self.assertEqual(next((p for p in latest(hr_topic, 10) if p == "90"), None), "90")
        # Clear the node's retained topics on this broker (it is ours, but leave it clean).
        stop_node()


if __name__ == "__main__":
    unittest.main()
