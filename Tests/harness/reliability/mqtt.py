"""A minimal MQTT 3.1.1 client (QoS 0/1, no keepalive pings: keepalive 0) on 127.0.0.1: one
connection per Client, a reader thread that records every message with its arrival time and
acknowledges QoS 1, and connect_retrying for a broker that is still starting. Its packet
encoders are used directly by the stuck scenario (a subscriber that never reads)."""
import socket
import struct
import threading
import time

from .common import lower_this_thread, now_ms


def encode_string(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("!H", len(b)) + b


def encode_packet(first, body):
    n, length = len(body), b""
    while True:
        digit = n % 128
        n //= 128
        length += bytes([digit | (0x80 if n else 0)])
        if not n:
            break
    return bytes([first]) + length + body


class ConnectRefused(Exception):
    pass


class Client:
    """One MQTT connection. With `reader`, a thread records every message received as
    (arrival epoch ms, topic, payload bytes, retain flag) and acknowledges QoS 1."""

    def __init__(self, port, client_id, clean=True, username=None, password=None, reader=True, timeout=5, low_priority=False):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.send_lock = threading.Lock()
        self.cond = threading.Condition()
        self.messages = []
        self.pubacks = set()
        self.subacks = {}
        self.closed = False
        self.next_id = 0
        flags = (0x02 if clean else 0) | (0x80 if username else 0) | (0x40 if password is not None else 0)
        body = encode_string("MQTT") + bytes([4, flags]) + struct.pack("!H", 0) + encode_string(client_id)
        if username:
            body += encode_string(username)
        if password is not None:
            body += encode_string(password)
        self.sock.sendall(encode_packet(0x10, body))
        first, payload = self._read_packet()
        if first >> 4 != 2 or payload[1] != 0:
            self.sock.close()
            raise ConnectRefused(f"CONNACK {payload!r}")
        self.session_present = bool(payload[0] & 1)
        self.sock.settimeout(None)
        self.low_priority = low_priority
        if reader:
            threading.Thread(target=self._run, daemon=True).start()

    def _recv_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    def _read_packet(self):
        first = self._recv_exact(1)[0]
        mult, length = 1, 0
        while True:
            d = self._recv_exact(1)[0]
            length += (d & 0x7F) * mult
            mult *= 128
            if not d & 0x80:
                break
        return first, self._recv_exact(length)

    def _run(self):
        if self.low_priority:
            lower_this_thread()
        try:
            while True:
                first, body = self._read_packet()
                kind = first >> 4
                if kind == 3:
                    qos = (first >> 1) & 3
                    tlen = struct.unpack("!H", body[:2])[0]
                    topic = body[2:2 + tlen].decode("utf-8", "replace")
                    pos = 2 + tlen
                    if qos:
                        pid = body[pos:pos + 2]
                        pos += 2
                        self._send(encode_packet(0x40, pid))
                    with self.cond:
                        self.messages.append((now_ms(), topic, body[pos:], bool(first & 1)))
                        self.cond.notify_all()
                elif kind == 4:
                    with self.cond:
                        self.pubacks.add(struct.unpack("!H", body[:2])[0])
                        self.cond.notify_all()
                elif kind == 9:
                    with self.cond:
                        self.subacks[struct.unpack("!H", body[:2])[0]] = body[2:]
                        self.cond.notify_all()
        except (OSError, ConnectionError, IndexError):
            pass
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def _send(self, data):
        with self.send_lock:
            self.sock.sendall(data)

    def _id(self):
        with self.send_lock:
            self.next_id = self.next_id % 65535 + 1
            return self.next_id

    def subscribe(self, topic, qos=1, wait=True):
        pid = self._id()
        self._send(encode_packet(0x82, struct.pack("!H", pid) + encode_string(topic) + bytes([qos])))
        if wait:
            self.wait_for(lambda: pid in self.subacks, 5, f"SUBACK for {topic}")

    def publish(self, topic, payload, qos=1, retain=False, wait=False):
        if isinstance(payload, str):
            payload = payload.encode()
        body = encode_string(topic)
        pid = None
        if qos:
            pid = self._id()
            body += struct.pack("!H", pid)
        self._send(encode_packet(0x30 | (qos << 1) | (1 if retain else 0), body + payload))
        if wait and pid:
            self.wait_for(lambda: pid in self.pubacks, 10, "PUBACK")
        return pid

    def wait_for(self, predicate, timeout, what="a condition"):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
                self.cond.wait(min(left, 0.2))

    def count(self):
        with self.cond:
            return len(self.messages)

    def since(self, index, topic=None):
        with self.cond:
            return [m for m in self.messages[index:] if topic is None or m[1] == topic]

    def close(self):
        try:
            self._send(b"\xe0\x00")
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def connect_retrying(port, client_id, deadline_s=20, **kw):
    end = time.monotonic() + deadline_s
    while True:
        try:
            return Client(port, client_id, **kw)
        except (OSError, ConnectionError, ConnectRefused):
            if time.monotonic() > end:
                raise
            time.sleep(0.005)
