"""What a broker does to an MQTT 5 CONNECT, read off the wire: the node's version negotiation
must tell these apart. One raw TCP connection, one CONNECT (protocol level 5, clean
start, keep-alive 30 s, session expiry and Maximum Packet Size properties as the node sends
them), then whatever comes back within `timeout` seconds."""
import socket
import struct
import time


def _string(s):
    b = s.encode()
    return struct.pack("!H", len(b)) + b


def _varint(n):
    out = b""
    while True:
        d, n = n % 128, n // 128
        out += bytes([d | (0x80 if n else 0)])
        if not n:
            return out


def mqtt5_connect(port, username=None, password=None, timeout=5.0):
    """Returns (verdict, detail): verdict is `accepts`, `refuses` (a CONNACK with a failure
    code: detail names it and whether the CONNACK was in 3.1.1 or MQTT 5 form), `closes` (the
    connection closed with no CONNACK) or `silent` (no answer within `timeout`, connection kept)."""
    props = b"\x11" + struct.pack("!I", 3600) + b"\x27" + struct.pack("!I", 2 * 1024 * 1024)
    flags = 0x02 | (0x80 if username is not None else 0) | (0x40 if password is not None else 0)
    body = _string("MQTT") + bytes([5, flags]) + struct.pack("!H", 30) + _varint(len(props)) + props + _string("pacer-probe-v5")
    if username is not None:
        body += _string(username)
    if password is not None:
        body += _string(password)
    packet = bytes([0x10]) + _varint(len(body)) + body
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    t0 = time.monotonic()
    try:
        s.sendall(packet)
        data = b""
        while time.monotonic() - t0 < timeout:
            s.settimeout(max(0.05, timeout - (time.monotonic() - t0)))
            try:
                chunk = s.recv(4096)
            except socket.timeout:
                break
            except ConnectionResetError:
                return "closes", f"connection reset after {1000 * (time.monotonic() - t0):.0f} ms, no CONNACK"
            if not chunk:
                if data:
                    break
                return "closes", f"connection closed after {1000 * (time.monotonic() - t0):.0f} ms, no CONNACK"
            data += chunk
            if len(data) >= 4 and data[0] == 0x20:
                break
        if not data:
            return "silent", f"no CONNACK within {timeout:.0f} s (connection left open)"
        if data[0] != 0x20:
            return "closes", f"answered packet type 0x{data[0]:02x}, not a CONNACK"
        length = data[1]
        if length == 2:   # a 3.1.1 CONNACK: flags, return code
            code = data[3]
            names = {0: "accepted", 1: "unacceptable protocol version", 2: "identifier rejected",
                     3: "server unavailable", 4: "bad user name or password", 5: "not authorized"}
            if code == 0:
                return "accepts", "3.1.1-form CONNACK 0 to an MQTT 5 CONNECT"
            return "refuses", f"3.1.1-form CONNACK, return code {code} ({names.get(code, '?')})"
        reason = data[3]
        if reason == 0:
            return "accepts", "MQTT 5 CONNACK, reason 0 (success)"
        return "refuses", f"MQTT 5 CONNACK, reason 0x{reason:02x}" + (" (unsupported protocol version)" if reason == 0x84 else "")
    finally:
        s.close()
