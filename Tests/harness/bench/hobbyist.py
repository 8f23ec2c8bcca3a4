#!/usr/bin/env python3
"""The script a hobbyist writes: one loop, once a second, publishes every timer's remaining
seconds and display text (retained, QoS 0), with a plain socket (MQTT 3.1.1, no library).

  hobbyist.py PORT BASE TIMERS SECONDS

Each timer's state (with ends_at_ms) is published once at start, so scripts/bench's C
subscriber measures its lateness like the node's."""
import socket, struct, sys, time


def encode_length(n):
    out = bytearray()
    while True:
        byte, n = n % 128, n // 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def publish(topic, payload, qos=0):
    t = topic.encode()
    body = struct.pack("!H", len(t)) + t + (struct.pack("!H", 1) if qos else b"") + payload
    return bytes([0x31 | (qos << 1)]) + encode_length(len(body)) + body


def main():
    port, base, timers, seconds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client = b"hobbyist"
    variable = struct.pack("!H", 4) + b"MQTT" + bytes([4, 2]) + struct.pack("!H", 60)
    body = variable + struct.pack("!H", len(client)) + client
    sock.sendall(bytes([0x10]) + encode_length(len(body)) + body)
    sock.recv(4)  # CONNACK
    ends = int(time.time() * 1000) // 1000 * 1000 + 7_200_000
    for i in range(timers):
        sock.sendall(publish(f"{base}/timers/h{i}/state", f'{{"id":"h{i}","ends_at_ms":{ends}}}'.encode()))
    stop = time.time() + seconds
    while time.time() < stop:
        time.sleep(1 - time.time() % 1)  # the next whole second
        remaining = int((ends - time.time() * 1000 + 999) // 1000)
        text = f"{remaining // 3600}:{remaining // 60 % 60:02d}:{remaining % 60:02d}"
        for i in range(timers):
            sock.sendall(publish(f"{base}/timers/h{i}/remaining", str(remaining).encode()))
            sock.sendall(publish(f"{base}/timers/h{i}/display", text.encode()))
    sock.sendall(b"\xe0\x00")  # DISCONNECT
    sock.close()


if __name__ == "__main__":
    main()
