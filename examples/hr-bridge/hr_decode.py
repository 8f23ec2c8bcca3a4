"""Decoding of the Bluetooth Heart Rate service's characteristics (service 0x180D), and of the
Battery Service's Battery Level (0x180F, 0x2A19) that many straps offer beside it.

Pure functions, no Bluetooth and no MQTT: the bytes a strap notifies go in, a value or a
`DecodeError` that says what is wrong comes out.

Heart Rate Measurement (0x2A37), as the Bluetooth SIG's Heart Rate Service specification
lays it out (all multi-byte fields little-endian):

    byte 0     flags
               bit 0     heart rate value format: 0 = uint8, 1 = uint16
               bits 1-2  sensor contact: bit 2 = the strap reports contact, bit 1 = contact
                         detected (values 0 and 1 of the pair: not supported)
               bit 3     energy expended present (uint16, kilojoules since the last reset)
               bit 4     RR intervals present (one or more uint16, in 1/1024 s)
               bits 5-7  reserved (ignored)
    then       heart rate (uint8 or uint16), energy expended (if flagged), RR intervals (if
               flagged) up to the end of the packet.

A packet whose length does not match its flags is refused rather than read as far as it
goes: a 16-bit value sent with the 8-bit flag (a broken firmware) would otherwise be read as
a plausible but wrong heart rate, with its second byte left over.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

HEART_RATE_SERVICE = "0000180d-0000-1000-8000-00805f9b34fb"
HEART_RATE_MEASUREMENT = "00002a37-0000-1000-8000-00805f9b34fb"
BODY_SENSOR_LOCATION = "00002a38-0000-1000-8000-00805f9b34fb"
BATTERY_SERVICE = "0000180f-0000-1000-8000-00805f9b34fb"
BATTERY_LEVEL = "00002a19-0000-1000-8000-00805f9b34fb"

_FORMAT_UINT16 = 0x01
_CONTACT_DETECTED = 0x02
_CONTACT_SUPPORTED = 0x04
_ENERGY_PRESENT = 0x08
_RR_PRESENT = 0x10

# Body Sensor Location (0x2A38) values; 7-255 are reserved for future use.
BODY_SENSOR_LOCATIONS = ("other", "chest", "wrist", "finger", "hand", "ear_lobe", "foot")


class DecodeError(ValueError):
    """A characteristic value that cannot be read; the message says what is wrong with it."""


@dataclass(frozen=True)
class Measurement:
    """One Heart Rate Measurement notification."""

    bpm: int
    """Beats per minute as sent (0 means the strap has no reading)."""
    contact: Optional[bool]
    """True: skin contact detected; False: the strap reports no contact; None: not supported."""
    energy_kj: Optional[int]
    """Energy expended in kilojoules, when the strap sends it."""
    rr_1024: tuple[int, ...]
    """RR intervals as sent, in 1/1024 s (empty when the strap sends none)."""

    @property
    def rr_ms(self) -> tuple[float, ...]:
        """RR intervals in milliseconds."""
        return tuple(raw * 1000 / 1024 for raw in self.rr_1024)


def _hex(data: bytes) -> str:
    return data.hex(" ") if data else "(empty)"


def decode_measurement(data: bytes) -> Measurement:
    """Decodes a Heart Rate Measurement (0x2A37) value.

    Raises:
        DecodeError: the packet is empty, shorter than its flags announce, or longer with
            bytes its flags do not account for.
    """
    data = bytes(data)
    if not data:
        raise DecodeError("empty heart rate measurement: expected at least a flags byte and a heart rate")
    flags = data[0]
    wide = bool(flags & _FORMAT_UINT16)
    width = 2 if wide else 1
    offset = 1

    def need(count: int, what: str) -> None:
        if len(data) < offset + count:
            raise DecodeError(
                f"truncated heart rate measurement ({len(data)} bytes: {_hex(data)}): flags 0x{flags:02x} "
                f"announce {what} at byte {offset}, but the packet ends there"
            )

    need(width, "a 16-bit heart rate" if wide else "an 8-bit heart rate")
    bpm = int.from_bytes(data[offset:offset + width], "little")
    offset += width

    if flags & _CONTACT_SUPPORTED:
        contact: Optional[bool] = bool(flags & _CONTACT_DETECTED)
    else:
        contact = None

    energy: Optional[int] = None
    if flags & _ENERGY_PRESENT:
        need(2, "the energy expended (2 bytes)")
        energy = int.from_bytes(data[offset:offset + 2], "little")
        offset += 2

    rr: tuple[int, ...] = ()
    rest = len(data) - offset
    if flags & _RR_PRESENT:
        if rest == 0:
            raise DecodeError(
                f"truncated heart rate measurement ({len(data)} bytes: {_hex(data)}): flags 0x{flags:02x} "
                f"announce RR intervals at byte {offset}, but the packet ends there"
            )
        if rest % 2:
            raise DecodeError(
                f"malformed heart rate measurement ({len(data)} bytes: {_hex(data)}): RR intervals are "
                f"2 bytes each, but {rest} bytes follow byte {offset}"
            )
        rr = tuple(int.from_bytes(data[i:i + 2], "little") for i in range(offset, len(data), 2))
    elif rest:
        raise DecodeError(
            f"malformed heart rate measurement ({len(data)} bytes: {_hex(data)}): flags 0x{flags:02x} "
            f"account for {offset} bytes, {rest} more follow (a 16-bit value sent with the 8-bit flag?)"
        )
    return Measurement(bpm=bpm, contact=contact, energy_kj=energy, rr_1024=rr)


def decode_body_sensor_location(data: bytes) -> str:
    """Decodes a Body Sensor Location (0x2A38) value: `chest`, `wrist`, ... or `reserved-N`.

    Raises:
        DecodeError: the value is not exactly one byte.
    """
    data = bytes(data)
    if len(data) != 1:
        raise DecodeError(f"body sensor location must be 1 byte, got {len(data)}: {_hex(data)}")
    value = data[0]
    return BODY_SENSOR_LOCATIONS[value] if value < len(BODY_SENSOR_LOCATIONS) else f"reserved-{value}"


def decode_battery_level(data: bytes) -> int:
    """Decodes a Battery Level (0x2A19) value: the charge left, 0-100 %.

    Raises:
        DecodeError: the value is not exactly one byte, or above 100 (101-255 are reserved).
    """
    data = bytes(data)
    if len(data) != 1:
        raise DecodeError(f"battery level must be 1 byte, got {len(data)}: {_hex(data)}")
    if data[0] > 100:
        raise DecodeError(f"battery level must be 0-100 %, got {data[0]} (a reserved value)")
    return data[0]
