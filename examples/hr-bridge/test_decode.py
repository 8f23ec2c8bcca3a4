#!/usr/bin/env python3
"""hr_decode.py on byte sequences as straps send them. Needs nothing but Python.

Run: cd examples/hr-bridge && python3 -m unittest test_decode
"""
import os
import random
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hr_decode import DecodeError, Measurement, decode_body_sensor_location, decode_measurement  # noqa: E402


def packet(text):
    """Bytes from the hex dump a BLE sniffer or `btmon` shows: "16 48 2c 03"."""
    return bytes.fromhex(text)


class RecordedMeasurements(unittest.TestCase):
    def test_8bit_contact_detected_two_rr(self):
        # flags 0x16: 8-bit value, contact supported and detected, RR present; 72 bpm.
        m = decode_measurement(packet("16 48 2c 03 1f 03"))
        self.assertEqual(m.bpm, 72)
        self.assertIs(m.contact, True)
        self.assertIsNone(m.energy_kj)
        self.assertEqual(m.rr_1024, (0x032C, 0x031F))
        self.assertEqual(m.rr_ms, (812 * 1000 / 1024, 799 * 1000 / 1024))
        self.assertAlmostEqual(m.rr_ms[0], 792.96875)

    def test_8bit_no_contact_feature_no_rr(self):
        # flags 0x00: the simplest strap (an older chest belt or an optical arm band): 90 bpm.
        self.assertEqual(decode_measurement(packet("00 5a")), Measurement(90, None, None, ()))

    def test_contact_bit_without_support_bit_means_not_supported(self):
        # flags 0x02: "detected" without "supported" is value 1 of the pair: not supported.
        self.assertIsNone(decode_measurement(packet("02 5a")).contact)

    def test_contact_supported_not_detected(self):
        # flags 0x04: the strap is off the skin; it sends 0 bpm (some send the last value).
        m = decode_measurement(packet("04 00"))
        self.assertEqual((m.bpm, m.contact), (0, False))
        m = decode_measurement(packet("14 4b 00 03"))
        self.assertEqual((m.bpm, m.contact, m.rr_1024), (75, False, (768,)))
        self.assertEqual(m.rr_ms, (750.0,))

    def test_16bit_value(self):
        # flags 0x11: uint16 little-endian value (180 bpm) and one RR of 341/1024 s.
        m = decode_measurement(packet("11 b4 00 55 01"))
        self.assertEqual((m.bpm, m.contact, m.rr_1024), (180, None, (341,)))
        self.assertAlmostEqual(m.rr_ms[0], 333.0078125)
        # A value over 255 only fits in 16 bits: the high byte counts.
        self.assertEqual(decode_measurement(packet("01 2c 01")).bpm, 300)

    def test_energy_expended_and_rr(self):
        # flags 0x1e: contact detected, energy (0x1234 = 4660 kJ), two RR intervals; 140 bpm.
        m = decode_measurement(packet("1e 8c 34 12 b7 01 b6 01"))
        self.assertEqual((m.bpm, m.contact, m.energy_kj, m.rr_1024), (140, True, 4660, (439, 438)))
        # 16-bit value with energy and no RR (flags 0x0f).
        self.assertEqual(decode_measurement(packet("0f 9b 00 00 00")), Measurement(155, True, 0, ()))

    def test_several_rr_intervals(self):
        # 150 bpm notified once a second: two or three beats per notification.
        m = decode_measurement(packet("16 96 99 01 9a 01 98 01"))
        self.assertEqual(m.rr_1024, (409, 410, 408))
        self.assertEqual([round(x, 1) for x in m.rr_ms], [399.4, 400.4, 398.4])
        # The most a 23-byte ATT notification holds with an 8-bit value: 9 intervals.
        nine = decode_measurement(bytes([0x10, 60]) + struct.pack("<9H", *range(1000, 1009)))
        self.assertEqual(nine.rr_1024, tuple(range(1000, 1009)))

    def test_reserved_flag_bits_are_ignored(self):
        self.assertEqual(decode_measurement(packet("e6 5a")), Measurement(90, True, None, ()))


class MalformedMeasurements(unittest.TestCase):
    def assertRefused(self, hex_text, *fragments):
        with self.assertRaises(DecodeError) as caught:
            decode_measurement(packet(hex_text))
        for fragment in fragments:
            self.assertIn(fragment, str(caught.exception))

    def test_empty(self):
        self.assertRefused("", "empty")

    def test_flags_only(self):
        self.assertRefused("16", "truncated", "8-bit heart rate", "1 bytes: 16")

    def test_16bit_value_cut(self):
        self.assertRefused("01 b4", "truncated", "16-bit heart rate")

    def test_energy_cut(self):
        self.assertRefused("08 5a 01", "truncated", "energy expended")
        self.assertRefused("09 5a 00", "truncated", "energy expended")

    def test_rr_flag_without_intervals(self):
        self.assertRefused("10 5a", "truncated", "RR intervals")

    def test_rr_cut_in_half(self):
        self.assertRefused("16 48 2c 03 1f", "malformed", "2 bytes each", "3 bytes follow byte 2")

    def test_bytes_the_flags_do_not_announce(self):
        # A 16-bit value (0x0150) sent with the 8-bit flag would read as 80 bpm: refused.
        self.assertRefused("00 50 01", "malformed", "1 more follow")

    def test_any_bytes_decode_or_raise_decode_error(self):
        rng = random.Random(30)
        samples = [bytes([a, b]) for a in range(256) for b in range(256)]
        samples += [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24))) for _ in range(20000)]
        for data in samples:
            try:
                m = decode_measurement(data)
            except DecodeError:
                continue
            self.assertGreaterEqual(m.bpm, 0)
            self.assertLessEqual(m.bpm, 0xFFFF)


class EncodedByTheSpec(unittest.TestCase):
    """Packets built field by field from the Bluetooth characteristic's layout decode to the
    same fields."""

    def test_round_trip(self):
        rng = random.Random(2037)
        for _ in range(5000):
            wide = rng.random() < 0.5
            bpm = rng.randrange(0x10000 if wide else 0x100)
            contact = rng.choice([None, False, True])
            energy = rng.choice([None, rng.randrange(0x10000)])
            rr = tuple(rng.randrange(0x10000) for _ in range(rng.randrange(0, 8)))
            flags = (1 if wide else 0) | (0x08 if energy is not None else 0) | (0x10 if rr else 0)
            flags |= {None: rng.choice([0, 2]), False: 4, True: 6}[contact]
            data = bytes([flags]) + struct.pack("<H" if wide else "<B", bpm)
            if energy is not None:
                data += struct.pack("<H", energy)
            data += struct.pack(f"<{len(rr)}H", *rr)
            with self.subTest(data=data.hex(" ")):
                self.assertEqual(decode_measurement(data), Measurement(bpm, contact, energy, rr))


class BodySensorLocation(unittest.TestCase):
    def test_values(self):
        self.assertEqual(decode_body_sensor_location(packet("01")), "chest")
        self.assertEqual(decode_body_sensor_location(packet("00")), "other")
        self.assertEqual(decode_body_sensor_location(packet("02")), "wrist")
        self.assertEqual(decode_body_sensor_location(packet("06")), "foot")
        self.assertEqual(decode_body_sensor_location(packet("07")), "reserved-7")

    def test_wrong_length(self):
        for text in ("", "01 00"):
            with self.assertRaises(DecodeError) as caught:
                decode_body_sensor_location(packet(text))
            self.assertIn("must be 1 byte", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
