#!/usr/bin/env python3
"""ble.py's BleSource through the real bleak, against fake_bluez.py (a stand-in for
bluetoothd on a private dbus-daemon; no radio): which straps it takes, the Body Sensor
Location, notifications into the Bridge, a strap's Battery Level (read, then notified), a refused connection that does not stop another
strap, a dropped link and a silent strap reconnected, a strap linked before the start taken,
scans never overlapping a connection set-up, every strap disconnected at the end.

Needs the requirements (bleak, paho-mqtt) and dbus-daemon. Run: cd examples/hr-bridge && python -m unittest test_ble
"""
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import bleak  # noqa: E402, F401
except ImportError:  # plain `python3 -m unittest` runs the decoder's tests and says why not these
    raise unittest.SkipTest("needs bleak and paho-mqtt: run with the venv's python (README.md, Tests)") from None
from ble import BleSource  # noqa: E402
from bridge import Bridge, StrapSelection  # noqa: E402
from fake_bluez import FakeBlueZ  # noqa: E402
from test_bridge import ALICE_72, ALICE_90, ALICE_140  # noqa: E402
from test_cli import PrivateSystemBus  # noqa: E402


class Recorder:
    """A publisher that keeps what it is given (the MQTT side is test_bridge.py's)."""

    def __init__(self):
        self.messages = []

    def publish(self, topic, payload, qos, retain):
        self.messages.append((topic, payload))
        return True

    def states(self, strap):
        return [json.loads(p) for t, p in self.messages if t == f"hr-bridge/test/straps/{strap}"]

    def bpms(self, strap):
        return [json.loads(p)["bpm"] for t, p in self.messages if t == f"hr/{strap}"]


async def until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)


@unittest.skipUnless(shutil.which("dbus-daemon"), "no dbus-daemon")
class BleSourceOnFakeBlueZ(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="hr-bridge-ble-")
        self.addCleanup(shutil.rmtree, self.work, True)
        self.bus = PrivateSystemBus(self.work).__enter__()
        self.addCleanup(self.bus.__exit__)
        previous = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS")
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self.bus.address  # where bleak finds "BlueZ"
        self.addCleanup(lambda: os.environ.pop("DBUS_SYSTEM_BUS_ADDRESS") if previous is None
                        else os.environ.__setitem__("DBUS_SYSTEM_BUS_ADDRESS", previous))

    def test_straps_through_bleak(self):
        asyncio.run(self.scenario())

    async def scenario(self):
        bluez = await FakeBlueZ.start(self.bus.address)
        alice = bluez.add_strap("C8:3A:1B:2C:3D:4E", "Polar H10 1A2B3C4D", battery=87)
        bob = bluez.add_strap("F1:02:03:04:05:06", "TICKR 1234", refuse_connections=1)
        carol = bluez.add_strap("AA:BB:CC:DD:EE:FF", "Someone else's strap")
        dave = bluez.add_strap("D0:0D:0D:0D:0D:0D", "HRM-Dual 55")
        dave.linked()  # connected before the bridge started, so not advertising
        await asyncio.sleep(0.1)  # its ServicesResolved
        rec = Recorder()
        bridge = Bridge(rec, status_topic="hr-bridge/test")
        selection = StrapSelection.parse(["c8:3a:1b:2c:3d:4e=alice", "TICKR 1234=bob", "D0:0D:0D:0D:0D:0D=dave"],
                                         take_all=False)
        source = BleSource(selection, scan_seconds=0.3, silence_seconds=3)
        # The straps' hearts: each beating strap notifies its packet twice a second, as straps do.
        beating = {alice: ALICE_72}

        async def hearts():
            while True:
                for strap, packet in list(beating.items()):
                    strap.notify(packet)
                await asyncio.sleep(0.5)

        pump = asyncio.create_task(hearts())
        task = asyncio.create_task(source.run(bridge))
        try:
            with self.assertLogs("hr-bridge", "INFO") as logs:
                # Alice (by address, any case): connected, her location read, her readings published.
                await until(lambda: rec.states("alice"), 15, "alice to connect")
                self.assertEqual({k: rec.states("alice")[0][k] for k in ("state", "location", "address", "name")},
                                 {"state": "connected", "location": "chest", "address": alice.address, "name": alice.name})
                await until(lambda: 72 in rec.bpms("alice"), 5, "72 bpm on hr/alice")
                # Her Battery Service: read at the connect, then heard as it runs down (it notifies).
                await until(lambda: rec.states("alice")[-1].get("battery_pct") == 87, 5, "alice's battery, 87 %")
                self.assertTrue(alice.set_battery(14), "the bridge subscribed to her Battery Level")
                await until(lambda: rec.states("alice")[-1].get("battery_pct") == 14, 5, "alice's battery, 14 %")

                # Dave, linked already and silent in the air, is taken without a Connect of ours.
                await until(lambda: rec.states("dave"), 10, "dave, connected before the start, to be taken")
                self.assertEqual(dave.connects, 0)
                beating[dave] = bytes.fromhex("06 78")
                await until(lambda: 120 in rec.bpms("dave"), 5, "120 bpm on hr/dave")

                # Bob (by name) refused his first connection: logged, retried, connected; alice went on.
                await until(lambda: bob.connects >= 1, 10, "a connection attempt to bob")
                beating[alice] = ALICE_140
                await until(lambda: 140 in rec.bpms("alice"), 5, "alice's reading while bob failed")
                await until(lambda: rec.states("bob"), 15, "bob to connect after his refusal")
                self.assertEqual(bob.connects, 2)
                beating[bob] = bytes.fromhex("11 b4 00 55 01")
                await until(lambda: 180 in rec.bpms("bob"), 5, "180 bpm on hr/bob")
                self.assertEqual(alice.connects, 1, "alice, beating all along, was never reconnected")

                # Alice's link drops: lost, then she advertises again and is back.
                alice.drop()
                await until(lambda: rec.states("alice")[-1]["state"] == "lost", 5, "alice lost")
                self.assertEqual(rec.states("alice")[-1]["reason"], "the strap disconnected")
                await until(lambda: alice.connects == 2 and rec.states("alice")[-1]["state"] == "connected", 15,
                            "alice to reconnect")
                beating[alice] = ALICE_90
                await until(lambda: 90 in rec.bpms("alice"), 5, "90 bpm after the reconnect")

                # Bob stays connected but goes silent: after 3 s the bridge reconnects him.
                del beating[bob]
                bob_quiet = time.monotonic()
                await until(lambda: rec.states("bob")[-1]["state"] == "lost", 10, "silent bob to be dropped")
                self.assertGreaterEqual(time.monotonic() - bob_quiet, 2.5)
                self.assertEqual(rec.states("bob")[-1]["reason"], "no notification for 3 s; reconnecting")
                await until(lambda: bob.connects == 3 and bob.connected, 15, "bob to reconnect after his silence")
                self.assertEqual(alice.connects, 2)

            text = "\n".join(logs.output)
            self.assertIn("strap bob (F1:02:03:04:05:06): cannot connect: BlueZ error", text)
            self.assertIn("le-connection-abort-by-remote", text)
            # Carol was never asked for: no connection, nothing published.
            self.assertEqual(carol.connects, 0)
            self.assertFalse([t for t, _ in rec.messages if "aabbccddeeff" in t])
            # No scan started while a connection was being set up (the adapter takes turns).
            self.assertEqual(bluez.overlaps, 0)
            self.assertGreater(bluez.adapter.filters_set, 1)
        finally:
            task.cancel()
            pump.cancel()
            await asyncio.gather(task, pump, return_exceptions=True)
        # Stopping disconnected every strap.
        self.assertFalse(alice.connected or bob.connected or dave.connected, "a strap is still connected after the bridge stopped")
        bluez.stop()


if __name__ == "__main__":
    unittest.main()
