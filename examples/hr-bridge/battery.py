"""A strap's battery: the standard Battery Service (0x180F), Battery Level (0x2A19), where the
strap has it. No bleak import: `StrapBattery` drives any client shaped like bleak's
`BleakClient` (`services.get_characteristic`, `read_gatt_char`, `start_notify`), so its logic
is tested with a fake client and Python alone (test_battery.py); ble.py gives it the real one.

The level is read once when the strap connects. A strap whose characteristic notifies says
when it changes; one that does not is read again every `every` seconds (the charge moves by
a percent in hours: a read every 5 minutes costs the strap nothing). Each new level goes to
the sink (`StrapSink.strap_battery`, bridge.py), which puts it in the strap's retained state.
A strap without the service, or a read that fails, never ends the strap's session: heart rate
is what matters.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable, Optional

from hr_decode import BATTERY_LEVEL, DecodeError, decode_battery_level

log = logging.getLogger("hr-bridge")


class StrapBattery:
    """The Battery Level of one connected strap, reported to `sink` when it changes."""

    def __init__(self, client, strap, sink, every: float = 300.0, timeout: float = 10.0,
                 clock: Callable[[], float] = time.monotonic):
        self.client, self.strap, self.sink = client, strap, sink
        self.every = every
        self.timeout = timeout  # a strap that does not answer a read: given up, tried at the next one
        self.clock = clock
        self.characteristic = None
        self.notifying = False
        self.level: Optional[int] = None
        self._due: Optional[float] = None
        self._problems = 0

    @property
    def present(self) -> bool:
        """Whether the strap offers a Battery Level."""
        return self.characteristic is not None

    async def start(self) -> None:
        """Finds the characteristic, subscribes where it notifies, and reads it once."""
        try:
            self.characteristic = self.client.services.get_characteristic(BATTERY_LEVEL)
        except Exception as e:  # noqa: BLE001 - e.g. two Battery Levels (a strap with two batteries): none read
            log.debug("strap %s: no usable battery level: %s", self.strap.id, e)
            self.characteristic = None
        if self.characteristic is None:
            log.debug("strap %s: no Battery Service (0x180F); no battery shown", self.strap.id)
            return
        if "notify" in (getattr(self.characteristic, "properties", None) or []):
            try:
                await self.client.start_notify(self.characteristic, self._notified)
                self.notifying = True
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - then it is read every `every` seconds
                log.debug("strap %s: battery notifications refused: %s", self.strap.id, e)
        await self.read()

    def next_in(self) -> Optional[float]:
        """Seconds until the next read is due (0: now); None when none will be (no battery, or it notifies)."""
        if self._due is None:
            return None
        return max(0.0, self._due - self.clock())

    async def poll(self) -> None:
        """Reads the level if a read is due."""
        if self._due is not None and self.clock() >= self._due:
            await self.read()

    async def read(self) -> None:
        """Reads the level now; the next read is due `every` seconds later unless the strap notifies."""
        if self.characteristic is None:
            return
        try:
            data = await asyncio.wait_for(self.client.read_gatt_char(self.characteristic), self.timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - a failed read is tried again at the next one
            self._problem(f"cannot read the battery level: {e}")
            data = None
        self._due = None if self.notifying else self.clock() + self.every
        if data is not None:
            self._report(bytes(data))

    def _notified(self, _characteristic, data: bytearray) -> None:
        self._report(bytes(data))

    def _report(self, data: bytes) -> None:
        try:
            level = decode_battery_level(data)
        except DecodeError as e:
            self._problem(str(e))
            return
        if level != self.level:
            self.level = level
            self.sink.strap_battery(self.strap, level)

    def _problem(self, text: str) -> None:
        self._problems += 1
        if self._problems == 1 or self._problems % 100 == 0:  # the first, then every 100th
            log.warning("strap %s: %s (the battery is not shown until a read succeeds)", self.strap.id, text)
