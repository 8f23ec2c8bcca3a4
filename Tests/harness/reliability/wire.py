"""The storm's instruments outside the node: LoopbackSniffer (kernel timestamps of the MQTT
PUBLISH segments of one topic on the loopback interface, root only) tells the node's delay from
the broker's; BrokerBacklog (`ss` every 50 ms) samples the bytes the node sent that the broker
has not read yet."""
import os
import shutil
import socket
import struct
import subprocess
import threading
import time

from .common import lower_this_thread, now_ms


class LoopbackSniffer:
    """Sees every MQTT PUBLISH of one topic on the loopback interface, with the kernel's
    timestamp of each TCP segment (root only: an AF_PACKET socket). It tells the node's delay
    from the broker's: a segment to the broker's port left the node then; one from the broker's
    port to a subscriber's port left the broker then. Records (wall ms, src port, dst port, payload)."""

    SO_TIMESTAMPNS = 35

    def __init__(self, broker_port, topic):
        self.broker_port, self.topic = broker_port, topic.encode()
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        self.sock.bind(("lo", 0))
        self.sock.setsockopt(socket.SOL_SOCKET, self.SO_TIMESTAMPNS, 1)
        # A storm is tens of thousands of segments in a second: a large buffer (SO_RCVBUFFORCE,
        # root) so the kernel keeps them while this thread catches up; drops are counted.
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, 33, 256 << 20)
        except OSError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
        self.sock.settimeout(0.2)
        self.records, self.stopped = [], False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @staticmethod
    def available():
        if os.geteuid() != 0 or not hasattr(socket, "AF_PACKET"):
            return False
        try:
            socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003)).close()
            return True
        except OSError:
            return False

    def _run(self):
        # At normal priority, though it is measuring, not load: a storm of 60,000 commands is
        # more segments than the kernel keeps for a thread that only gets the idle time.
        while True:
            try:
                data, anc, _, addr = self.sock.recvmsg(65536, 64)
            except socket.timeout:
                if self.stopped:
                    return  # stopped, and every segment the kernel kept has been read
                continue
            except OSError:
                return
            if addr[2] == 4:  # PACKET_OUTGOING: loopback delivers each segment again as incoming
                continue
            ts = None
            for level, kind, raw in anc:
                if level == socket.SOL_SOCKET and kind == self.SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", raw[:16])
                    ts = sec * 1000 + nsec / 1e6
            if ts is None or len(data) < 34 or data[12:14] != b"\x08\x00" or data[23] != 6:
                continue
            ip = 14 + (data[14] & 0x0F) * 4
            sport, dport = struct.unpack("!HH", data[ip:ip + 4])
            if self.broker_port not in (sport, dport):
                continue
            body = data[ip + (data[ip + 12] >> 4) * 4:]
            for payload in self._publishes(body, v5=(dport == self.broker_port)):
                self.records.append((ts, sport, dport, payload))

    def _publishes(self, body, v5):
        """The payloads of the PUBLISH packets of our topic in one TCP segment."""
        start = 0
        while True:
            i = body.find(self.topic, start)
            if i < 0:
                return
            start = i + 1
            for k in range(1, 5):
                pos = i - 2 - k - 1
                if pos < 0 or body[pos] & 0xF0 != 0x30 or struct.unpack("!H", body[i - 2:i])[0] != len(self.topic):
                    continue
                rl, mult, ok = 0, 1, True
                for j in range(k):
                    b = body[pos + 1 + j]
                    rl += (b & 0x7F) * mult
                    mult *= 128
                    if (j < k - 1) != bool(b & 0x80):
                        ok = False
                if not ok:
                    continue
                end = pos + 1 + k + rl
                p = i + len(self.topic) + (2 if (body[pos] >> 1) & 3 else 0)
                if v5 and p < len(body):
                    plen, mult = 0, 1
                    while p < len(body):
                        b = body[p]
                        p += 1
                        plen += (b & 0x7F) * mult
                        mult *= 128
                        if not b & 0x80:
                            break
                    p += plen
                if end <= len(body):
                    yield bytes(body[p:end])
                break

    def stop(self):
        """Stops capturing; returns how many segments the kernel dropped (buffer full)."""
        time.sleep(0.5)
        self.stopped = True
        self.thread.join(60)  # it reads what the kernel still holds first
        try:
            _, drops = struct.unpack("II", self.sock.getsockopt(263, 6, 8))  # SOL_PACKET, PACKET_STATISTICS
        except OSError:
            drops = None
        self.sock.close()
        return drops


class BrokerBacklog:
    """Samples (every 50 ms, with `ss` from iproute2) how many bytes the node has sent on its
    connection that the broker has not read yet (the Recv-Q of the broker's end): anything the
    node publishes waits behind them. None when `ss` is missing."""

    def __init__(self, broker_port, node_pid):
        self.broker_port, self.node_pid = broker_port, node_pid
        self.samples, self.stopped = [], False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @staticmethod
    def available():
        return shutil.which("ss") is not None

    def _node_port(self):
        out = subprocess.run(["ss", "-tnpH"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 6 and f[4].endswith(f":{self.broker_port}") and f"pid={self.node_pid}," in line:
                return f[3].rsplit(":", 1)[1]
        return None

    def _run(self):
        lower_this_thread()
        port = self._node_port()
        while not self.stopped and port:
            out = subprocess.run(["ss", "-tnH"], capture_output=True, text=True).stdout
            for line in out.splitlines():
                f = line.split()
                if len(f) >= 5 and f[3].endswith(f":{self.broker_port}") and f[4].endswith(f":{port}"):
                    self.samples.append((now_ms(), int(f[1])))
            time.sleep(0.05)

    def stop(self):
        self.stopped = True
        self.thread.join(2)
        return {"samples": len(self.samples), "max_bytes": max((b for _, b in self.samples), default=None),
                "median_bytes": sorted(b for _, b in self.samples)[len(self.samples) // 2] if self.samples else None}
