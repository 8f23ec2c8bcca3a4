"""The display side of the matrix: a paho-mqtt client that records every message it gets, a
real `pacer run`, and a TCP proxy between the node and its broker that can cut the connection
(the node's reconnects, its last will)."""
import json
import os
import secrets
import socket
import subprocess
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties


class Display:
    """One MQTT connection (3.1.1 or 5, TCP or WebSockets) recording (arrival ms, topic,
    payload text, retain, qos, properties) of every message."""

    def __init__(self, port, version="3.1.1", ws_url=None, username=None, password=None, name="display"):
        proto = mqtt.MQTTv5 if version == "5" else mqtt.MQTTv311
        self.version = version
        transport = "websockets" if ws_url else "tcp"
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"{name}-{secrets.token_hex(4)}",
                             protocol=proto, transport=transport)
        if username:
            self.c.username_pw_set(username, password)
        self.msgs, self.lock, self.connected = [], threading.Condition(), threading.Event()
        self.connack = None
        self.c.on_message = self._on_message
        self.c.on_connect = self._on_connect
        host, p = "127.0.0.1", port
        if ws_url:
            rest = ws_url.split("://", 1)[1]
            hostport, path = rest.split("/", 1)
            p = int(hostport.rsplit(":", 1)[1])
            self.c.ws_set_options(path="/" + path)
        self.c.connect(host, p, keepalive=30)
        self.c.loop_start()
        if not self.connected.wait(15):
            self.close()
            raise RuntimeError(f"{name}: no CONNACK ({self.connack})")

    def _on_connect(self, c, userdata, flags, rc, props=None):
        self.connack = str(rc)
        if not rc.is_failure:
            self.connected.set()

    def _on_message(self, c, userdata, m):
        props = {}
        if m.properties is not None:
            for key in ("ResponseTopic", "CorrelationData"):
                if hasattr(m.properties, key):
                    props[key] = getattr(m.properties, key)
        with self.lock:
            self.msgs.append((time.time() * 1000, m.topic, m.payload.decode(errors="replace"), bool(m.retain), m.qos, props))
            self.lock.notify_all()

    def subscribe(self, topic, qos=1, settle=1.0):
        self.c.subscribe(topic, qos)
        time.sleep(settle)

    def publish(self, topic, payload, qos=1, retain=False, response_topic=None, correlation=None):
        props = None
        if response_topic and self.version == "5":
            props = Properties(PacketTypes.PUBLISH)
            props.ResponseTopic = response_topic
            props.CorrelationData = correlation
        return self.c.publish(topic, payload, qos=qos, retain=retain, properties=props)

    def wait(self, pred, timeout, start=0):
        """The first recorded message from index `start` on satisfying pred(msg), waiting up to
        `timeout` s; None if none."""
        end = time.time() + timeout
        with self.lock:
            while True:
                for m in self.msgs[start:]:
                    if pred(m):
                        return m
                left = end - time.time()
                if left <= 0:
                    return None
                self.lock.wait(min(left, 0.2))

    def mark(self):
        with self.lock:
            return len(self.msgs)

    def since(self, index):
        with self.lock:
            return list(self.msgs[index:])

    def close(self):
        try:
            self.c.disconnect()
        except Exception:
            pass
        self.c.loop_stop()


def state_of(m):
    try:
        return json.loads(m[2])
    except ValueError:
        return None


class Proxy:
    """A TCP proxy 127.0.0.1:port -> 127.0.0.1:target. `cut(seconds)` closes every connection
    through it and refuses new ones (closing them at once) for `seconds`."""

    def __init__(self, target):
        self.target = target
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.refuse_until = 0.0
        self.conns, self.lock = [], threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                a, _ = self.sock.accept()
            except OSError:
                return
            if time.time() < self.refuse_until:
                a.close()
                continue
            try:
                b = socket.create_connection(("127.0.0.1", self.target), 5)
            except OSError:
                a.close()
                continue
            b.settimeout(None)   # the connect timeout must not become an idle timeout
            for s in (a, b):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.conns += [a, b]
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()
            threading.Thread(target=self._pipe, args=(b, a), daemon=True).start()

    def _pipe(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self, seconds):
        self.refuse_until = time.time() + seconds
        with self.lock:
            conns, self.conns = self.conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def close(self):
        self.closed = True
        self.cut(0)
        self.sock.close()


class Node:
    """A real `pacer run` (PACER_BIN) with a data directory of its own."""

    def __init__(self, binary, port, node_id, data_dir, version, username=None, password=None, log=None, extra_env=None):
        cmd = [binary, "run", "--broker", f"mqtt://127.0.0.1:{port}", "--node", node_id, "--data-dir", data_dir,
               "--log-level", "info"] + (["--mqtt-version", version] if version else [])
        os.makedirs(data_dir, exist_ok=True)
        if username:
            pw = os.path.join(data_dir, "password")
            with open(pw, "w") as f:
                f.write(password)
            cmd += ["--username", username, "--password-file", pw]
        self.log = log or os.path.join(data_dir, "node.log")
        env = dict(os.environ, **(extra_env or {}))
        with open(self.log, "ab") as f:
            self.p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        self.pid = self.p.pid

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)

    def tail(self, n=15):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""
