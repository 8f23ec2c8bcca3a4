#!/usr/bin/env python3
"""hr_bridge.py as a person runs it: bad options, no Bluetooth (no D-Bus system bus; a D-Bus
with no BlueZ on it; fake_bluez.py with no adapter, with one powered off, and refusing this
user), the broker's online/offline, SIGTERM; and `explain` on each error bleak raises. Needs the requirements (bleak, paho-mqtt), mosquitto and dbus-daemon.

Run: cd examples/hr-bridge && python -m unittest test_cli
"""
import asyncio
import contextlib
import io
import os
import shutil
import signal
import subprocess
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
from bleak.exc import (  # noqa: E402
    BleakBluetoothNotAvailableError,
    BleakBluetoothNotAvailableReason,
    BleakDBusError,
    BleakDeviceNotFoundError,
)

import hr_bridge  # noqa: E402
from ble import explain  # noqa: E402
from test_bridge import Mosquitto, Subscriber  # noqa: E402

BRIDGE = os.path.join(HERE, "hr_bridge.py")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run_bridge(*args, env=None, timeout=10):
    return subprocess.run([sys.executable, BRIDGE, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


class BadOptions(unittest.TestCase):
    def assertRefused(self, args, *fragments, env=None):
        """hr_bridge.main in this process (a bad option stops it before any I/O)."""
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                status = hr_bridge.main(args, {**os.environ, **(env or {})})
            except SystemExit as e:  # argparse's own refusals
                status = e.code
        self.assertEqual(status, 2, err.getvalue())
        for fragment in fragments:
            self.assertIn(fragment, err.getvalue())

    def test_exit_status_and_message_of_the_program(self):
        p = run_bridge("--strap", "C8:3A:1B:2C:3D:4E=Alice!")
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertEqual(p.stderr.strip(), "hr_bridge.py: strap id 'Alice!' is not usable as a topic level: use 1-64 "
                                           "characters a-z, 0-9, _ and -, starting with a letter or digit (e.g. alice, strap-3)")

    def test_each_bad_option_is_named(self):
        self.assertRefused(["--strap", "C8:3A:1B:2C:3D:4E=Alice!"], "strap id 'Alice!' is not usable as a topic level")
        self.assertRefused(["--strap", "=alice"], "expected ADDRESS[=ID] or NAME[=ID]")
        self.assertRefused(["--strap", "C8:3A:1B:2C:3D:4E=a", "--strap", "Polar H10=a"], "the id 'a' is given to")
        self.assertRefused(["--broker", "http://localhost"], "the scheme must be mqtt:// or mqtts://")
        self.assertRefused(["--broker", "mqtt://localhost:99999"], "the port must be a number")
        self.assertRefused(["--prefix", "hr/+"], "--prefix 'hr/+' is not a usable topic prefix")
        self.assertRefused(["--prefix", "hr", "--status-topic", "hr/bridge"], "lies under --prefix")
        self.assertRefused(["--password-file", "/nonexistent/pw"], "--password-file /nonexistent/pw: cannot read it")
        self.assertRefused([], "a broker password is set but no user name", env={"HR_BRIDGE_PASSWORD": "x"})
        self.assertRefused(["--format", "xml"], "invalid choice: 'xml'")


class Explain(unittest.TestCase):
    def test_errors_bleak_raises_are_explained(self):
        cases = [
            (BleakBluetoothNotAvailableError("No Bluetooth adapters found.", BleakBluetoothNotAvailableReason.NO_BLUETOOTH),
             "no Bluetooth adapter"),
            (BleakBluetoothNotAvailableError("No powered Bluetooth adapters found.", BleakBluetoothNotAvailableReason.POWERED_OFF),
             "bluetoothctl power on"),
            (BleakBluetoothNotAvailableError("auth failed", BleakBluetoothNotAvailableReason.DENIED_BY_SYSTEM),
             "'bluetooth' group"),
            (BleakDBusError("org.freedesktop.DBus.Error.ServiceUnknown", ["The name is not activatable"]),
             "systemctl enable --now bluetooth"),
            (BleakDBusError("org.freedesktop.DBus.Error.AccessDenied", ["Rejected send message"]), "'bluetooth' group"),
            (BleakDBusError("org.bluez.Error.NotPermitted", ["Notify not permitted"]), "'bluetooth' group"),
            (BleakDBusError("org.bluez.Error.InProgress", ["Operation already in progress"]), "busy"),
            (BleakDeviceNotFoundError("C8:3A:1B:2C:3D:4E"), "advertise only while worn"),
            (asyncio.TimeoutError(), "held by a phone or watch"),
            (PermissionError(13, "Permission denied"), "'bluetooth' group"),
            (FileNotFoundError(2, "No such file or directory"), "cannot reach the D-Bus system bus"),
        ]
        for error, fragment in cases:
            with self.subTest(error=repr(error)):
                self.assertIn(fragment, explain(error))


class NoBluetooth(unittest.TestCase):
    """The real BleSource where there is no Bluetooth: it says why, keeps the broker side up
    (status online) and keeps retrying, and stops on SIGTERM with offline."""

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="hr-bridge-cli-")
        self.addCleanup(shutil.rmtree, self.work, True)
        self.broker = Mosquitto(self.work).start()
        self.addCleanup(self.broker.stop)

    def bridge_without_bluetooth(self, bus_address, expected):
        status = "hr-bridge/cli-test"
        sub = Subscriber(self.broker.port, [f"{status}/status"])
        self.addCleanup(sub.stop)
        env = {**os.environ, "DBUS_SYSTEM_BUS_ADDRESS": bus_address}
        out = os.path.join(self.work, "bridge.log")
        with open(out, "w") as log:
            proc = subprocess.Popen([sys.executable, BRIDGE, "--broker", f"mqtt://127.0.0.1:{self.broker.port}",
                                     "--status-topic", status, "--scan-seconds", "0.5"],
                                    stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            self.assertEqual(sub.take(1, timeout=10)[0][1], "online")
            deadline = time.monotonic() + 10
            while expected not in read(out) and time.monotonic() < deadline:
                time.sleep(0.1)
            text = read(out)
            self.assertIn(expected, text)
            time.sleep(0.5)
            self.assertIsNone(proc.poll(), f"the bridge died:\n{text}")
            self.assertEqual(text.count(expected), 1, f"the same problem is logged once while it lasts:\n{text}")
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(10), 0, read(out))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(sub.take(1)[0][1], "offline")
        return read(out)

    def test_no_dbus(self):
        self.bridge_without_bluetooth(f"unix:path={self.work}/no-such-bus",
                                      "cannot reach the D-Bus system bus (No such file or directory): is D-Bus running")

    @unittest.skipUnless(shutil.which("dbus-daemon"), "no dbus-daemon")
    def test_dbus_without_bluez(self):
        with PrivateSystemBus(self.work) as bus:
            self.bridge_without_bluetooth(bus.address, "BlueZ is not running")

    def with_fake_bluez(self, adapter, expected, deny=False):
        with PrivateSystemBus(self.work, deny_bluez=deny) as bus:
            bluez = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_bluez.py"), bus.address, adapter],
                                     stdout=subprocess.PIPE, text=True)
            try:
                self.assertEqual(bluez.stdout.readline().strip(), "ready")
                self.bridge_without_bluetooth(bus.address, expected)
            finally:
                bluez.terminate()
                bluez.wait(5)
                bluez.stdout.close()

    @unittest.skipUnless(shutil.which("dbus-daemon"), "no dbus-daemon")
    def test_no_adapter(self):
        self.with_fake_bluez("none", "no Bluetooth adapter: `bluetoothctl list` shows none")

    @unittest.skipUnless(shutil.which("dbus-daemon"), "no dbus-daemon")
    def test_adapter_off(self):
        self.with_fake_bluez("off", "the Bluetooth adapter is off: `sudo rfkill unblock bluetooth` then `bluetoothctl power on`")

    @unittest.skipUnless(shutil.which("dbus-daemon"), "no dbus-daemon")
    def test_bluez_refuses_this_user(self):
        self.with_fake_bluez("on", "permission denied by BlueZ (D-Bus: org.freedesktop.DBus.Error.AccessDenied): run the "
                                   "bridge as root or as a user in the 'bluetooth' group", deny=True)


class PrivateSystemBus:
    """A dbus-daemon of the test's own (a system bus that anyone may use), stopped by its PID."""

    def __init__(self, work, deny_bluez=False):
        deny = '<deny send_destination="org.bluez"/>' if deny_bluez else ""
        self.conf = os.path.join(work, "bus.conf")
        self.socket = os.path.join(work, "bus")
        self.address = f"unix:path={self.socket}"
        with open(self.conf, "w") as f:
            f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>system</type><listen>unix:path={self.socket}</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*"/><allow own="*"/><allow receive_sender="*"/>{deny}</policy></busconfig>
""")
        self.proc = None

    def __enter__(self):
        self.proc = subprocess.Popen(["dbus-daemon", f"--config-file={self.conf}", "--nofork", "--nopidfile"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 5
        while not os.path.exists(self.socket):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.__exit__()
                raise RuntimeError("dbus-daemon did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)


if __name__ == "__main__":
    unittest.main()
