"""A stand-in for bluetoothd on a private D-Bus, for test_ble.py: an adapter and heart-rate
straps behind BlueZ's D-Bus API (org.bluez.Adapter1, Device1, GattService1,
GattCharacteristic1), as much of it as bleak uses to scan, connect, read and subscribe.

It is not a radio and not BlueZ: it checks that ble.py drives bleak the way BlueZ is driven
and copes with what straps do (advertise only while not connected, notify, drop the link,
refuse a connection). How a real strap and a real bluetoothd behave is untested here.
"""
from __future__ import annotations

import asyncio
from typing import Optional

from dbus_fast import DBusError
from dbus_fast.aio import MessageBus
from dbus_fast.service import PropertyAccess, ServiceInterface, dbus_property, method

from hr_decode import BATTERY_LEVEL, BATTERY_SERVICE, BODY_SENSOR_LOCATION, HEART_RATE_MEASUREMENT, HEART_RATE_SERVICE

ADAPTER = "/org/bluez/hci0"


class Adapter(ServiceInterface):
    def __init__(self, bluez: "FakeBlueZ"):
        super().__init__("org.bluez.Adapter1")
        self.bluez = bluez
        self.discovering = False
        self.filters_set = 0

    @method()
    def SetDiscoveryFilter(self, filters: "a{sv}"):  # noqa: N802, F821 - D-Bus names and signatures
        self.filters_set += 1

    @method()
    def StartDiscovery(self):  # noqa: N802
        if self.discovering:
            raise DBusError("org.bluez.Error.InProgress", "Operation already in progress")
        if self.bluez.connecting:
            self.bluez.overlaps += 1
        self.discovering = True
        self.emit_properties_changed({"Discovering": True})

    @method()
    def StopDiscovery(self):  # noqa: N802
        self.discovering = False
        self.emit_properties_changed({"Discovering": False})

    @method()
    def RemoveDevice(self, device: "o"):  # noqa: N802, F821
        pass

    @dbus_property(access=PropertyAccess.READ)
    def Address(self) -> "s":  # noqa: N802, F821
        return "00:1A:7D:DA:71:13"

    @dbus_property(access=PropertyAccess.READ)
    def Name(self) -> "s":  # noqa: N802, F821
        return "fake-hci0"

    @dbus_property(access=PropertyAccess.READ)
    def Powered(self) -> "b":  # noqa: N802, F821
        return self.bluez.powered

    @dbus_property(access=PropertyAccess.READ)
    def Discovering(self) -> "b":  # noqa: N802, F821
        return self.discovering

    @dbus_property(access=PropertyAccess.READ)
    def Roles(self) -> "as":  # noqa: N802, F821
        return ["central", "peripheral"]


class Device(ServiceInterface):
    def __init__(self, strap: "FakeStrap"):
        super().__init__("org.bluez.Device1")
        self.strap = strap

    @method()
    def Connect(self):  # noqa: N802
        self.strap.connect()

    @method()
    def Disconnect(self):  # noqa: N802
        self.strap.drop()

    @dbus_property(access=PropertyAccess.READ)
    def Address(self) -> "s":  # noqa: N802, F821
        return self.strap.address

    @dbus_property(access=PropertyAccess.READ)
    def AddressType(self) -> "s":  # noqa: N802, F821
        return "public"

    @dbus_property(access=PropertyAccess.READ)
    def Name(self) -> "s":  # noqa: N802, F821
        return self.strap.name

    @dbus_property(access=PropertyAccess.READ)
    def Alias(self) -> "s":  # noqa: N802, F821
        return self.strap.name

    @dbus_property(access=PropertyAccess.READ)
    def Adapter(self) -> "o":  # noqa: N802, F821
        return ADAPTER

    @dbus_property(access=PropertyAccess.READ)
    def UUIDs(self) -> "as":  # noqa: N802, F821
        return [HEART_RATE_SERVICE]

    @dbus_property(access=PropertyAccess.READ)
    def RSSI(self) -> "n":  # noqa: N802, F821
        return self.strap.rssi

    @dbus_property(access=PropertyAccess.READ)
    def Connected(self) -> "b":  # noqa: N802, F821
        return self.strap.connected

    @dbus_property(access=PropertyAccess.READ)
    def ServicesResolved(self) -> "b":  # noqa: N802, F821
        return self.strap.connected

    @dbus_property(access=PropertyAccess.READ)
    def Paired(self) -> "b":  # noqa: N802, F821
        return False

    @dbus_property(access=PropertyAccess.READ)
    def Trusted(self) -> "b":  # noqa: N802, F821
        return False


class GattService(ServiceInterface):
    def __init__(self, device_path: str, uuid: str = HEART_RATE_SERVICE):
        super().__init__("org.bluez.GattService1")
        self.device_path = device_path
        self.uuid = uuid

    @dbus_property(access=PropertyAccess.READ)
    def UUID(self) -> "s":  # noqa: N802, F821
        return self.uuid

    @dbus_property(access=PropertyAccess.READ)
    def Primary(self) -> "b":  # noqa: N802, F821
        return True

    @dbus_property(access=PropertyAccess.READ)
    def Device(self) -> "o":  # noqa: N802, F821
        return self.device_path


class Characteristic(ServiceInterface):
    def __init__(self, service_path: str, uuid: str, flags: list[str], value: bytes = b""):
        super().__init__("org.bluez.GattCharacteristic1")
        self.service_path, self.uuid, self.flags, self.value = service_path, uuid, flags, value
        self.notifying = False

    @method()
    def ReadValue(self, options: "a{sv}") -> "ay":  # noqa: N802, F821
        if "read" not in self.flags:
            raise DBusError("org.bluez.Error.NotPermitted", "Read not permitted")
        return self.value

    @method()
    def StartNotify(self):  # noqa: N802
        self.notifying = True
        self.emit_properties_changed({"Notifying": True})

    @method()
    def StopNotify(self):  # noqa: N802
        self.notifying = False
        self.emit_properties_changed({"Notifying": False})

    @dbus_property(access=PropertyAccess.READ)
    def UUID(self) -> "s":  # noqa: N802, F821
        return self.uuid

    @dbus_property(access=PropertyAccess.READ)
    def Service(self) -> "o":  # noqa: N802, F821
        return self.service_path

    @dbus_property(access=PropertyAccess.READ)
    def Flags(self) -> "as":  # noqa: N802, F821
        return self.flags

    @dbus_property(access=PropertyAccess.READ)
    def Value(self) -> "ay":  # noqa: N802, F821
        return self.value

    @dbus_property(access=PropertyAccess.READ)
    def Notifying(self) -> "b":  # noqa: N802, F821
        return self.notifying

    def notify(self, data: bytes) -> None:
        self.value = data
        self.emit_properties_changed({"Value": data})


class FakeStrap:
    """A strap: advertises while not connected, takes one connection, notifies when told."""

    def __init__(self, bluez: "FakeBlueZ", address: str, name: str, refuse_connections: int = 0,
                 battery: Optional[int] = None):
        self.bluez, self.address, self.name = bluez, address, name
        self.refuse_connections = refuse_connections
        self.path = f"{ADAPTER}/dev_{address.replace(':', '_')}"
        self.connected = False
        self.rssi = -60
        self.connects = 0
        self.device = Device(self)
        self.service = GattService(self.path)
        self.measurement = Characteristic(f"{self.path}/service000c", HEART_RATE_MEASUREMENT, ["notify"])
        self.location = Characteristic(f"{self.path}/service000c", BODY_SENSOR_LOCATION, ["read"], bytes([1]))
        # The Battery Service (0x180F), on straps given a `battery` level: its Battery Level reads and notifies.
        self.battery_service = GattService(self.path, BATTERY_SERVICE) if battery is not None else None
        self.battery = (Characteristic(f"{self.path}/service0020", BATTERY_LEVEL, ["read", "notify"], bytes([battery]))
                        if battery is not None else None)
        self.exported = False

    def appear(self) -> None:
        if not self.exported:
            self.bluez.bus.export(self.path, self.device)
            self.exported = True

    def linked(self) -> None:
        """Connected already when the bridge starts (left by a bridge that was killed): it does
        not advertise."""
        self.appear()
        self.connect()
        self.connects -= 1

    def connect(self) -> None:
        self.connects += 1
        if self.refuse_connections:
            self.refuse_connections -= 1
            raise DBusError("org.bluez.Error.Failed", "le-connection-abort-by-remote")
        if self.connected:
            raise DBusError("org.bluez.Error.AlreadyConnected", "Already Connected")
        self.bluez.connecting = True
        self.connected = True
        self.bluez.bus.export(f"{self.path}/service000c", self.service)
        self.bluez.bus.export(f"{self.path}/service000c/char000d", self.measurement)
        self.bluez.bus.export(f"{self.path}/service000c/char0010", self.location)
        if self.battery is not None:
            self.bluez.bus.export(f"{self.path}/service0020", self.battery_service)
            self.bluez.bus.export(f"{self.path}/service0020/char0021", self.battery)
        self.device.emit_properties_changed({"Connected": True})
        asyncio.get_running_loop().call_later(0.05, self._resolved)

    def _resolved(self) -> None:
        self.bluez.connecting = False
        if self.connected:
            self.device.emit_properties_changed({"ServicesResolved": True})

    def drop(self) -> None:
        """The link ends (the strap's side or a Disconnect call)."""
        if not self.connected:
            return
        self.connected = False
        self.measurement.notifying = False
        self.device.emit_properties_changed({"ServicesResolved": False, "Connected": False})
        for path in ("service000c/char000d", "service000c/char0010", "service000c"):
            self.bluez.bus.unexport(f"{self.path}/{path}")
        if self.battery is not None:
            self.battery.notifying = False
            for path in ("service0020/char0021", "service0020"):
                self.bluez.bus.unexport(f"{self.path}/{path}")

    def set_battery(self, level: int) -> bool:
        """The battery runs down: its Battery Level changes, notified if the bridge subscribed."""
        self.battery.value = bytes([level])
        if not (self.connected and self.battery.notifying):
            return False
        self.battery.notify(bytes([level]))
        return True

    def notify(self, data: bytes) -> bool:
        """Sends a Heart Rate Measurement if the bridge subscribed; False if nobody listens."""
        if not (self.connected and self.measurement.notifying):
            return False
        self.measurement.notify(data)
        return True


class FakeBlueZ:
    """org.bluez on a private bus: `await FakeBlueZ.start(address)`, then `add_strap(...)`."""

    def __init__(self, bus: MessageBus):
        self.bus = bus
        self.adapter = Adapter(self)
        self.straps: list[FakeStrap] = []
        self.connecting = False
        self.powered = True
        self.overlaps = 0  # scans started while a connection was being set up
        self._task: Optional[asyncio.Task] = None

    @classmethod
    async def start(cls, bus_address: str, adapter: str = "on") -> "FakeBlueZ":
        """org.bluez on the bus, with an adapter that is `on`, `off` (not powered) or `none`."""
        bus = await MessageBus(bus_address=bus_address).connect()
        await bus.request_name("org.bluez")
        bluez = cls(bus)
        bluez.powered = adapter == "on"
        if adapter != "none":
            bus.export(ADAPTER, bluez.adapter)
        bluez._task = asyncio.create_task(bluez._advertise())
        return bluez

    def add_strap(self, address: str, name: str, **kwargs) -> FakeStrap:
        strap = FakeStrap(self, address, name, **kwargs)
        self.straps.append(strap)
        return strap

    async def _advertise(self) -> None:
        """While discovering, each unconnected strap advertises (an RSSI update) every 0.1 s."""
        while True:
            await asyncio.sleep(0.1)
            if not self.adapter.discovering:
                continue
            for strap in self.straps:
                if strap.connected:
                    continue
                if not strap.exported:
                    strap.appear()
                else:
                    strap.device.emit_properties_changed({"RSSI": strap.rssi})

    def stop(self) -> None:
        if self._task:
            self._task.cancel()
        self.bus.disconnect()


async def _serve(bus_address: str, adapter: str) -> None:
    await FakeBlueZ.start(bus_address, adapter)
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    # For test_cli.py: python fake_bluez.py BUS_ADDRESS on|off|none, until it is stopped.
    import sys

    asyncio.run(_serve(sys.argv[1], sys.argv[2]))
