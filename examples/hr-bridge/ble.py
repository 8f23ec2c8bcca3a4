"""The radio side: finds Heart Rate straps with bleak (BlueZ over D-Bus on Linux) and reports
them to a `StrapSink` (bridge.py).

Untested on the build machine, which has no Bluetooth radio: everything behind `StrapSink`
is tested (test_bridge.py), and `explain` on the errors bleak raises without BlueZ.

One task per strap: it connects, reads the Body Sensor Location, subscribes to Heart Rate
Measurement notifications, reads the battery where the strap has the Battery Service
(battery.py) and waits until the strap disconnects or goes silent; a failure
ends that task only, and the strap is tried again when it advertises, after a backoff of its
own (2 s doubling to 60 s). Scans and connection attempts take turns on the adapter (BlueZ
refuses overlapping ones with "InProgress" on many adapters); notifications flow meanwhile.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import time
from typing import Optional

from bleak import BleakAdapter, BleakClient, BleakScanner
from bleak.exc import (
    BleakBluetoothNotAvailableError,
    BleakBluetoothNotAvailableReason,
    BleakCharacteristicNotFoundError,
    BleakDBusError,
    BleakDeviceNotFoundError,
    BleakError,
)

from battery import StrapBattery
from bridge import Strap, StrapSelection, StrapSink
from hr_decode import (
    BODY_SENSOR_LOCATION,
    HEART_RATE_MEASUREMENT,
    HEART_RATE_SERVICE,
    DecodeError,
    decode_body_sensor_location,
)

log = logging.getLogger("hr-bridge")

PERMISSION = (
    "run the bridge as root or as a user in the 'bluetooth' group (sudo usermod -aG bluetooth $USER, "
    "then log in again), and check BlueZ's D-Bus policy in /usr/share/dbus-1/system.d/bluetooth.conf"
)
START_BLUEZ = "start BlueZ: sudo systemctl enable --now bluetooth (Debian package: bluez)"


def explain(error: BaseException) -> str:
    """What went wrong with Bluetooth, said so that a person can act on it."""
    if isinstance(error, BleakBluetoothNotAvailableError):
        reason = error.reason
        if reason is BleakBluetoothNotAvailableReason.NO_BLUETOOTH:
            return ("no Bluetooth adapter: `bluetoothctl list` shows none. A Raspberry Pi 3, 4, 5 or Zero W "
                    "has one built in (check `rfkill list`; `sudo rfkill unblock bluetooth`); elsewhere plug in "
                    "a Bluetooth 4.0+ (BLE) USB adapter")
        if reason is BleakBluetoothNotAvailableReason.POWERED_OFF:
            return "the Bluetooth adapter is off: `sudo rfkill unblock bluetooth` then `bluetoothctl power on`"
        if reason is BleakBluetoothNotAvailableReason.NO_BLE_CENTRAL_ROLE:
            return "the Bluetooth adapter cannot do Bluetooth Low Energy: use a Bluetooth 4.0+ adapter"
        if reason in (BleakBluetoothNotAvailableReason.DENIED_BY_SYSTEM, BleakBluetoothNotAvailableReason.DENIED_BY_USER,
                      BleakBluetoothNotAvailableReason.DENIED_BY_UNKNOWN):
            return f"access to Bluetooth was denied ({error}): {PERMISSION}"
        return f"Bluetooth is not available ({error})"
    if isinstance(error, BleakDBusError):
        name = error.dbus_error
        if name in ("org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"):
            return f"BlueZ is not running (D-Bus: {name}): {START_BLUEZ}"
        if name in ("org.freedesktop.DBus.Error.AccessDenied", "org.bluez.Error.NotPermitted",
                    "org.bluez.Error.NotAuthorized"):
            return f"permission denied by BlueZ (D-Bus: {name}): {PERMISSION}"
        if name == "org.bluez.Error.NotReady":
            return "the Bluetooth adapter is not ready (powered off?): `bluetoothctl power on`"
        if name == "org.bluez.Error.InProgress":
            return "the adapter is busy with another scan or connection (another program using it?); retrying"
        return f"BlueZ error {error}"
    if isinstance(error, BleakDeviceNotFoundError):
        return "the strap is gone (out of range, or it stopped advertising: most straps advertise only while worn)"
    if isinstance(error, BleakCharacteristicNotFoundError):
        return "the device has no Heart Rate Measurement characteristic (0x2A37): not a heart-rate strap?"
    if isinstance(error, (asyncio.TimeoutError, TimeoutError)):
        return ("timed out connecting: the strap may be held by a phone or watch (most straps take one or two "
                "connections; close the other app) or be out of range")
    if isinstance(error, PermissionError):
        return f"permission denied ({error}): {PERMISSION}"
    if isinstance(error, (FileNotFoundError, ConnectionRefusedError)) or (
            isinstance(error, OSError) and error.errno in (errno.ENOENT, errno.ECONNREFUSED)):
        return (f"cannot reach the D-Bus system bus ({error.strerror or error}): is D-Bus running "
                f"(sudo systemctl start dbus)? Then {START_BLUEZ}. In a container, mount /run/dbus from the host")
    if isinstance(error, BleakError):
        return str(error) or type(error).__name__
    return f"{type(error).__name__}: {error}"


class BleSource:
    """Straps advertising the Heart Rate service (0x180D), found and followed with bleak."""

    def __init__(self, selection: StrapSelection, adapter: Optional[str] = None, scan_seconds: float = 5.0,
                 silence_seconds: float = 15.0, connect_timeout: float = 20.0, battery_seconds: float = 300.0):
        self.selection = selection
        self.battery_seconds = battery_seconds
        self.adapter = adapter
        self.scan_seconds = scan_seconds
        self.silence_seconds = silence_seconds
        self.connect_timeout = connect_timeout
        self._bluez = {"adapter": adapter} if adapter else {}
        self._radio = asyncio.Lock()  # a scan or a connection attempt at a time
        self._sessions: dict[str, asyncio.Task] = {}
        self._retry_at: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        self._wake = asyncio.Event()  # a session ended

    async def run(self, sink: StrapSink) -> None:
        """Scans and follows straps until cancelled; then disconnects every strap (BlueZ would
        keep the links up after the program ends, and a strap takes one or two at most)."""
        try:
            await self._scan(sink)
        finally:
            sessions = list(self._sessions.values())
            for task in sessions:
                task.cancel()
            await asyncio.gather(*sessions, return_exceptions=True)

    async def _scan(self, sink: StrapSink) -> None:
        problem: Optional[str] = None
        delay = 5.0
        while True:
            try:
                async with self._radio:
                    found = await BleakScanner.discover(timeout=self.scan_seconds, return_adv=True,
                                                        service_uuids=[HEART_RATE_SERVICE], bluez=self._bluez)
                    candidates = [(address, device, adv.local_name or device.name) for address, (device, adv) in found.items()]
                    candidates += await self._linked_straps(set(found))
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - every scan failure is explained and retried
                text = explain(e)
                if text != problem:
                    log.error("cannot scan for straps: %s; retrying (every 5-60 s)", text)
                    problem = text
                await asyncio.sleep(delay)
                delay = min(delay * 2, 60.0)
                continue
            if problem is not None:
                log.info("scanning for straps again")
            problem, delay = None, 5.0
            now = time.monotonic()
            for address, device, name in candidates:
                strap = self.selection.strap_for(address, name)
                if strap is None or address in self._sessions or self._retry_at.get(address, 0) > now:
                    continue
                self._sessions[address] = asyncio.create_task(self._session(device, strap, sink), name=strap.id)
            # Scan often while a wanted strap is missing, seldom when all are here, and at once
            # when a strap's session ends (it advertises again when its link is gone).
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=2 if self._missing() else 10)
            except asyncio.TimeoutError:
                pass

    async def _linked_straps(self, seen: set[str]) -> list:
        """Straps the adapter is connected to already but no session of ours follows: a strap
        does not advertise while connected, so one left connected by a bridge that was killed
        would never be found by a scan (BlueZ keeps the link)."""
        try:
            adapter = await BleakAdapter.get(bluez=self._bluez)
            devices = await adapter.get_connected_devices([HEART_RATE_SERVICE])
        except BleakError as e:
            log.debug("cannot list the connected devices: %s", e)
            return []
        return [(d.address, d, d.name) for d in devices if d.address not in seen and d.address not in self._sessions]

    def _missing(self) -> bool:
        if self.selection.take_all:
            return True
        return len(self._sessions) < len(self.selection.by_address) + len(self.selection.by_name)

    async def _session(self, device, strap: Strap, sink: StrapSink) -> None:
        loop = asyncio.get_running_loop()
        gone = asyncio.Event()
        last = [loop.time()]
        connected = False
        reason = "the strap disconnected"

        def notified(_characteristic, data: bytearray) -> None:
            last[0] = loop.time()
            sink.strap_notification(strap, bytes(data))

        try:
            client = BleakClient(device, disconnected_callback=lambda _c: gone.set(),
                                 timeout=self.connect_timeout, bluez=self._bluez)
            async with self._radio:
                await client.connect()
            try:
                location = None
                try:
                    location = decode_body_sensor_location(await client.read_gatt_char(BODY_SENSOR_LOCATION))
                except (BleakError, DecodeError) as e:
                    log.debug("strap %s: no body sensor location: %s", strap.id, e)
                await client.start_notify(HEART_RATE_MEASUREMENT, notified)
                connected = True
                self._failures.pop(strap.address, None)
                sink.strap_connected(strap, location)
                last[0] = loop.time()
                battery = StrapBattery(client, strap, sink, every=self.battery_seconds)
                await battery.start()
                while not gone.is_set():
                    quiet = loop.time() - last[0]
                    if quiet >= self.silence_seconds:
                        reason = f"no notification for {self.silence_seconds:.0f} s; reconnecting"
                        break
                    wait = self.silence_seconds - quiet
                    due = battery.next_in()
                    try:
                        await asyncio.wait_for(gone.wait(), timeout=wait if due is None else min(wait, due))
                    except asyncio.TimeoutError:
                        pass
                    if not gone.is_set():
                        await battery.poll()
            finally:
                try:
                    await asyncio.wait_for(client.disconnect(), timeout=10)
                except Exception as e:  # noqa: BLE001 - the session's own reason is what matters
                    log.debug("strap %s: disconnect: %s", strap.id, e)
        except asyncio.CancelledError:
            reason = "the bridge is stopping"
            raise
        except Exception as e:  # noqa: BLE001 - a strap's failure ends its own session only
            reason = explain(e)
        finally:
            self._sessions.pop(strap.address, None)
            failures = self._failures.get(strap.address, 0) + (0 if connected else 1)
            self._failures[strap.address] = failures
            self._retry_at[strap.address] = time.monotonic() + min(2.0 * 2 ** max(failures - 1, 0), 60.0) if failures else 0
            self._wake.set()
            if connected:
                sink.strap_lost(strap, reason)
            elif reason != "the bridge is stopping":
                log.warning("strap %s (%s): cannot connect: %s", strap.id, strap.address, reason)
