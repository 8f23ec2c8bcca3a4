#!/usr/bin/env python3
"""display.py's frame against the protocol's examples (Tests/Fixtures/protocol/states.json): for
each retained state, the plain topics' values as the node publishes them. Needs no paho-mqtt.

Run: python3 examples/python-display/test_display.py   (Tests/extra/python-display runs it)
"""
import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from display import frame  # noqa: E402

STATES = os.path.join(HERE, "..", "..", "Tests", "Fixtures", "protocol", "states.json")


def text(line):
    """The frame without its colour codes."""
    return re.sub(r"\x1b\[[0-9;]*m", "", line)


class FrameTests(unittest.TestCase):
    def setUp(self):
        with open(STATES, encoding="utf-8") as f:
            self.states = json.load(f)["states"]

    def test_every_state_shows_phase_time_and_round(self):
        self.assertGreaterEqual(len(self.states), 10)
        for example in self.states:
            plain = example["plain"]
            with self.subTest(example["name"]):
                shown = text(frame(plain))
                self.assertEqual(shown.split()[:2], [plain["phase"].upper(), plain["display"]], shown)
                if int(plain["rounds"]) > 1:
                    self.assertTrue(shown.endswith(f"  round {plain['round']}/{plain['rounds']}"), shown)
                else:
                    self.assertNotIn("round", shown)

    def test_colours_and_offline(self):
        plain = {p["plain"]["phase"]: p["plain"] for p in self.states}
        self.assertTrue(frame(plain["work"]).startswith("\x1b[32m"), "work is green")
        self.assertTrue(frame(plain["rest"]).startswith("\x1b[31m"), "rest is red")
        self.assertTrue(frame(plain["idle"]).startswith("\x1b[0m"), "idle is plain")
        self.assertEqual(text(frame(dict(plain["work"], status="offline"))), "NODE OFFLINE")
        self.assertIn("WORK", text(frame(dict(plain["work"], status="online"))))

    def test_before_any_value(self):
        # What display.py shows before the retained values arrive.
        self.assertEqual(text(frame({"display": "-:--", "phase": "idle", "round": "", "rounds": "", "status": ""})).split(), ["IDLE", "-:--"])


if __name__ == "__main__":
    unittest.main()
