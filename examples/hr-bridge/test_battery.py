#!/usr/bin/env python3
"""A strap's battery (battery.py) with a fake client, and into the Bridge's retained strap
state (bridge.py): Python alone, no bleak, no broker, no radio. The Battery Level decoder
(hr_decode.py) on its values.

Run: cd examples/hr-bridge && python3 -m unittest test_battery
"""
import asyncio
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from battery import StrapBattery  # noqa: E402
from bridge import Bridge, Strap  # noqa: E402
from hr_decode import BATTERY_LEVEL, DecodeError, decode_battery_level  # noqa: E402

ALICE = Strap(id="alice", address="C8:3A:1B:2C:3D:4E", name="Polar H10 1A2B3C4D")


class Characteristic:
    def __init__(self, properties):
        self.uuid = BATTERY_LEVEL
        self.properties = properties


class Services:
    def __init__(self, characteristic=None, error=None):
        self.characteristic, self.error = characteristic, error

    def get_characteristic(self, specifier):
        if self.error:
            raise self.error
        return self.characteristic if specifier == BATTERY_LEVEL else None


class FakeClient:
    """What StrapBattery uses of bleak's BleakClient: its services, reads and notifications."""

    def __init__(self, properties=("read",), levels=(87,), services=None, refuse_notify=False):
        self.characteristic = Characteristic(list(properties)) if properties is not None else None
        self.services = services or Services(self.characteristic)
        self.levels = list(levels)  # each read takes the next: an int, bytes, an exception, or "hang"
        self.reads = 0
        self.refuse_notify = refuse_notify
        self.callback = None

    async def read_gatt_char(self, characteristic):
        assert characteristic is self.characteristic
        self.reads += 1
        value = self.levels.pop(0) if len(self.levels) > 1 else self.levels[0]
        if isinstance(value, Exception):
            raise value
        if value == "hang":
            await asyncio.sleep(3600)
        return bytearray(value if isinstance(value, bytes) else [value])

    async def start_notify(self, characteristic, callback):
        if self.refuse_notify:
            raise RuntimeError("org.bluez.Error.NotPermitted")
        self.callback = callback

    def notify(self, level):
        self.callback(self.characteristic, bytearray([level]))


class Sink:
    def __init__(self):
        self.levels = []

    def strap_battery(self, strap, percent):
        self.levels.append((strap.id, percent))


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def run(coro):
    return asyncio.run(coro)


class BatteryLevelDecoding(unittest.TestCase):
    def test_levels(self):
        self.assertEqual(decode_battery_level(bytes([0])), 0)
        self.assertEqual(decode_battery_level(bytes([100])), 100)
        self.assertEqual(decode_battery_level(bytearray([15])), 15)
        for bad, why in ((b"", "1 byte, got 0"), (bytes([50, 1]), "1 byte, got 2"), (bytes([101]), "0-100 %, got 101")):
            with self.assertRaises(DecodeError) as e:
                decode_battery_level(bad)
            self.assertIn(why, str(e.exception))


class StrapBatteryWithAFakeClient(unittest.TestCase):
    def test_read_at_connect_and_again_every_interval(self):
        client, sink, clock = FakeClient(levels=(87, 87, 86)), Sink(), Clock()
        battery = StrapBattery(client, ALICE, sink, every=300, clock=clock)
        run(battery.start())
        self.assertTrue(battery.present)
        self.assertFalse(battery.notifying)
        self.assertEqual(sink.levels, [("alice", 87)])
        self.assertEqual(battery.next_in(), 300)
        clock.now += 299
        run(battery.poll())
        self.assertEqual(client.reads, 1, "not due yet")
        clock.now += 1
        self.assertEqual(battery.next_in(), 0)
        run(battery.poll())
        self.assertEqual(sink.levels, [("alice", 87)], "the same level: nothing new reported")
        clock.now += 300
        run(battery.poll())
        self.assertEqual(client.reads, 3)
        self.assertEqual(sink.levels, [("alice", 87), ("alice", 86)])

    def test_a_notifying_strap_is_read_once_then_heard(self):
        client, sink = FakeClient(properties=("read", "notify"), levels=(40,)), Sink()
        battery = StrapBattery(client, ALICE, sink, clock=Clock())
        run(battery.start())
        self.assertTrue(battery.notifying)
        self.assertIsNone(battery.next_in(), "no polling while it notifies")
        client.notify(15)
        client.notify(15)
        client.notify(14)
        self.assertEqual(sink.levels, [("alice", 40), ("alice", 15), ("alice", 14)])
        self.assertEqual(client.reads, 1)

    def test_notifications_refused_fall_back_to_reads(self):
        client, sink = FakeClient(properties=("read", "notify"), refuse_notify=True), Sink()
        battery = StrapBattery(client, ALICE, sink, every=60, clock=Clock())
        with self.assertLogs("hr-bridge", "DEBUG") as logs:
            run(battery.start())
        self.assertFalse(battery.notifying)
        self.assertEqual(battery.next_in(), 60)
        self.assertEqual(sink.levels, [("alice", 87)])
        self.assertIn("battery notifications refused", "\n".join(logs.output))

    def test_a_strap_without_the_service_reads_nothing(self):
        for services in (Services(None), Services(error=RuntimeError("Multiple Characteristics with this UUID"))):
            client, sink = FakeClient(properties=None, services=services), Sink()
            battery = StrapBattery(client, ALICE, sink, clock=Clock())
            run(battery.start())
            run(battery.poll())
            self.assertFalse(battery.present)
            self.assertIsNone(battery.next_in())
            self.assertEqual((client.reads, sink.levels), (0, []))

    def test_failed_reads_are_logged_once_and_tried_again(self):
        client, sink, clock = FakeClient(levels=(RuntimeError("org.bluez.Error.Failed"), bytes([200]), b"", 55)), Sink(), Clock()
        battery = StrapBattery(client, ALICE, sink, every=10, clock=clock)
        with self.assertLogs("hr-bridge", "WARNING") as logs:
            run(battery.start())
            for _ in range(3):
                clock.now += 10
                run(battery.poll())
        self.assertEqual(sink.levels, [("alice", 55)])
        self.assertEqual(len(logs.output), 1, logs.output)
        self.assertIn("strap alice: cannot read the battery level: org.bluez.Error.Failed", logs.output[0])

    def test_a_read_that_hangs_is_given_up(self):
        client, sink = FakeClient(levels=("hang",)), Sink()
        battery = StrapBattery(client, ALICE, sink, every=60, timeout=0.05, clock=Clock())
        with self.assertLogs("hr-bridge", "WARNING"):
            run(battery.start())
        self.assertEqual(sink.levels, [])
        self.assertEqual(battery.next_in(), 60, "tried again at the next read")


class Recorder:
    def __init__(self):
        self.messages = []

    def publish(self, topic, payload, qos, retain):
        self.messages.append((topic, json.loads(payload), qos, retain))
        return True


class BatteryInTheStrapState(unittest.TestCase):
    def test_the_retained_state_carries_the_battery(self):
        rec = Recorder()
        bridge = Bridge(rec, status_topic="hr-bridge/gym")
        bridge.strap_connected(ALICE, "chest")
        self.assertIsNone(rec.messages[-1][1]["battery_pct"], "unknown until read")
        bridge.strap_battery(ALICE, 87)
        bridge.strap_battery(ALICE, 87)
        bridge.strap_battery(ALICE, 12)
        states = [m for m in rec.messages if m[0] == "hr-bridge/gym/straps/alice"]
        self.assertEqual([s[1]["battery_pct"] for s in states], [None, 87, 12], "a state per change, not per read")
        self.assertTrue(all(s[2] == 1 and s[3] for s in states), "QoS 1, retained")
        self.assertEqual(states[-1][1]["state"], "connected")
        bridge.strap_lost(ALICE, "the strap disconnected")
        self.assertEqual(rec.messages[-1][1]["battery_pct"], 12, "the last level known stays with the lost strap")
        bridge.republish()
        self.assertEqual(rec.messages[-1][1]["battery_pct"], 12)


if __name__ == "__main__":
    unittest.main()
