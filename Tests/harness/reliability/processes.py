"""The processes and sockets under test: free ports on 127.0.0.1, /proc readings (RSS, CPU
time), a mosquitto broker (Broker: its own directory and config, restartable on the same port,
stopped by its PID), a TCP forwarder the test opens and closes (Gate), and a `pacer run`
process (Node) with its log."""
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

from .common import now_ms


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def proc_rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def proc_cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Broker:
    """A mosquitto on 127.0.0.1:port, its files in `directory`; restartable on the same port."""

    def __init__(self, directory, port=None, persistence=True, extra=(), users=None):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.port = port or free_port()
        self.proc = None
        self.persistence = persistence
        self.extra = list(extra)
        self.users = users or {}
        self.write_config()

    def write_config(self):
        lines = ["user root", "per_listener_settings false", "set_tcp_nodelay true",
                 f"persistence {'true' if self.persistence else 'false'}",
                 f"persistence_location {self.directory}/",
                 f"log_dest file {self.directory}/mosquitto.log",
                 "log_type error", "log_type warning", "log_type notice"]
        if self.users:
            pw = os.path.join(self.directory, "passwd")
            open(pw, "w").close()
            for user, password in self.users.items():
                subprocess.run(["mosquitto_passwd", "-b", pw, user, password], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            lines += ["allow_anonymous false", f"password_file {pw}"]
        else:
            lines.append("allow_anonymous true")
        lines += self.extra
        lines.append(f"listener {self.port} 127.0.0.1")
        with open(os.path.join(self.directory, "mosquitto.conf"), "w") as f:
            f.write("\n".join(lines) + "\n")

    def start(self):
        exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.proc = subprocess.Popen([exe, "-c", os.path.join(self.directory, "mosquitto.conf")],
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.directory, "stderr.log"), "a"))
        end = time.monotonic() + 10
        while not port_open(self.port):
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"mosquitto did not start; see {self.directory}")
            time.sleep(0.005)
        return now_ms()

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class Gate:
    """A TCP forwarder on 127.0.0.1:port to a broker's port that the test opens and closes.

    Closed, nothing listens (a connect is refused, as with the broker down); open, every
    connection is relayed byte for byte. It lets a test subscribe to a restarted broker before
    the node can reach it: without it the node may reconnect and republish its retained topics
    between the broker's first accept and the test's SUBACK, and the test sees only retained
    copies."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.port = free_port()
        self.listener = None
        self.lock = threading.Lock()

    def open(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(16)
        with self.lock:
            self.listener = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()
        return now_ms()

    def close(self):
        with self.lock:
            s, self.listener = self.listener, None
        if s:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=2)
            except OSError:
                client.close()
                continue
            for sock in (client, upstream):
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Node:
    """A `pacer run` process; its log (every start appended) in directory/node.log."""

    def __init__(self, pacer, directory, port, config, node_id="rel", env=None, args=()):
        self.pacer, self.directory, self.port = pacer, directory, port
        os.makedirs(directory, exist_ok=True)
        self.node_id = node_id
        self.base = f"pacer/{node_id}"
        self.data = os.path.join(directory, "data")
        self.config = os.path.join(directory, "pacer.yaml")
        with open(self.config, "w") as f:
            f.write(config)
        self.env = dict(os.environ, **(env or {}))
        self.args = list(args)
        self.log_path = os.path.join(directory, "node.log")
        self.proc = None

    def start(self):
        cmd = [self.pacer, "run", "--config", self.config, "--broker", f"mqtt://127.0.0.1:{self.port}",
               "--node", self.node_id, "--base-topic", self.base, "--data-dir", self.data, "--log-level", "info"] + self.args
        self.proc = subprocess.Popen(cmd, stdout=open(self.log_path, "a"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=self.env)
        return self.proc

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.alive():
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def topic(self, *parts):
        return "/".join([self.base] + list(parts))
