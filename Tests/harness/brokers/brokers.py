"""The brokers of the matrix, each started on 127.0.0.1 ports of its own with a temporary
config and data directory, and stopped by PID:

- mosquitto 2.0 (Debian): an MQTT listener and a WebSocket listener;
- amqtt (PyPI, MQTT 3.1.1 only): TCP and WebSocket listeners;
- a two-node RabbitMQ cluster (Debian's rabbitmq-server, MQTT and Web MQTT plugins);
- a two-node ejabberd cluster (Debian's ejabberd, mod_mqtt, MQTT over WebSocket on /mqtt).

The Erlang brokers run under an epmd of our own on a free port (ERL_EPMD_PORT), listening on
127.0.0.1 only, with a cookie made for the run, node names `<name>1@localhost` and
`<name>2@localhost` and distribution ports of their own: nothing on epmd's default port, no
system service, no cookie in a home directory is used or touched.

Every broker is a `Broker`: `.members` lists each member's MQTT port, WebSocket URL (or None)
and the PIDs to stop; `.stop()` stops them (SIGTERM, then SIGKILL) and removes the directory.
"""
import glob
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout, proc=None, what="broker", log=None):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.3).close()
            return
        except OSError:
            if proc is not None and proc.poll() is not None:
                break
            time.sleep(0.2)
    tail = ""
    if log and os.path.exists(log):
        with open(log, errors="replace") as f:
            tail = "".join(f.readlines()[-30:])
    raise RuntimeError(f"{what} did not open 127.0.0.1:{port} within {timeout} s\n{tail}")


class Member:
    def __init__(self, name, port, ws_url):
        self.name, self.port, self.ws_url = name, port, ws_url


class Broker:
    """A started broker or cluster. kind: mosquitto, amqtt, rabbitmq, ejabberd."""

    def __init__(self, kind, work):
        self.kind, self.work = kind, work
        self.members, self.procs = [], []
        self.username = self.password = None   # credentials every client needs (ejabberd)

    def popen(self, cmd, log, env=None, **kw):
        f = open(log, "ab")
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=env, start_new_session=True, **kw)
        f.close()
        self.procs.append(p)
        return p

    def stop(self):
        # the last started first (a cluster's second member before the first, epmd last)
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=10)
        shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _work(kind):
    return tempfile.mkdtemp(prefix=f"pacer-brokers-{kind}.")


def start_mosquitto(b):
    port, ws = free_port(), free_port()
    conf = os.path.join(b.work, "mosquitto.conf")
    with open(conf, "w") as f:
        f.write(f"per_listener_settings false\nset_tcp_nodelay true\nallow_anonymous true\npersistence false\n"
                f"max_queued_messages 1000\nlog_type error\nlog_type warning\n"
                f"listener {port} 127.0.0.1\nlistener {ws} 127.0.0.1\nprotocol websockets\n")
    log = os.path.join(b.work, "mosquitto.log")
    p = b.popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", conf], log)
    wait_port(port, 10, p, "mosquitto", log)
    wait_port(ws, 10, p, "mosquitto (WebSockets)", log)
    b.members.append(Member("mosquitto", port, f"ws://127.0.0.1:{ws}/mqtt"))
    return b


def start_amqtt(b, venv_bin, anonymous=False):
    """amqtt 0.12 with its AnonymousAuthPlugin. With allow_anonymous true it marks every session
    anonymous, and drops an anonymous session when its connection ends, persistent or not (the
    node's QoS 1 commands sent while it reconnects are lost; measured as `amqtt-anon`); with it
    false, any client that gives a user name is let in (no password check) and keeps its session."""
    port, ws = free_port(), free_port()
    conf = os.path.join(b.work, "amqtt.yaml")
    with open(conf, "w") as f:
        f.write("listeners:\n"
                f"  default:\n    type: tcp\n    bind: 127.0.0.1:{port}\n"
                f"  ws:\n    type: ws\n    bind: 127.0.0.1:{ws}\n"
                "plugins:\n"
                f"  amqtt.plugins.authentication.AnonymousAuthPlugin:\n    allow_anonymous: {'true' if anonymous else 'false'}\n")
    if not anonymous:
        b.username, b.password = "pacer", "unused"
    log = os.path.join(b.work, "amqtt.log")
    p = b.popen([os.path.join(venv_bin, "amqtt"), "-c", conf], log)
    wait_port(port, 30, p, "amqtt", log)
    wait_port(ws, 10, p, "amqtt (WebSockets)", log)
    b.members.append(Member("amqtt", port, f"ws://127.0.0.1:{ws}/mqtt"))
    return b


def _epmd(b):
    """Our own epmd on a free loopback port; returns the environment for every Erlang program."""
    port = free_port()
    log = os.path.join(b.work, "epmd.log")
    p = b.popen(["epmd", "-port", str(port), "-address", "127.0.0.1"], log)
    wait_port(port, 10, p, "epmd", log)
    env = dict(os.environ, ERL_EPMD_PORT=str(port), ERL_EPMD_ADDRESS="127.0.0.1", HOME=b.work)
    b.cookie = secrets.token_hex(16)
    return env


def _erl_eval(env, cookie, code, timeout=60):
    """Runs `code` in a short-lived hidden Erlang node of the same cluster cookie; returns its output."""
    name = f"ctl{secrets.token_hex(3)}@localhost"
    out = subprocess.run(["erl", "-noinput", "-hidden", "-sname", name, "-setcookie", cookie,
                          "-kernel", "inet_dist_use_interface", "{127,0,0,1}", "-eval", code],
                         env=env, capture_output=True, text=True, timeout=timeout)
    return (out.stdout + out.stderr).strip()


def start_rabbitmq(b, members=2):
    """A RabbitMQ cluster of `members` nodes (rabbitmq_mqtt + rabbitmq_web_mqtt), the second
    joined to the first with `rabbitmqctl join_cluster`."""
    env = _epmd(b)
    plugins = os.path.join(b.work, "enabled_plugins")
    with open(plugins, "w") as f:
        f.write("[rabbitmq_mqtt,rabbitmq_web_mqtt].\n")
    base = "/usr/lib/rabbitmq/bin"
    names = []
    for i in range(1, members + 1):
        name = f"rabbit{i}@localhost"
        d = os.path.join(b.work, f"rabbit{i}")
        os.makedirs(d)
        mqtt, ws, amqp, dist = free_port(), free_port(), free_port(), free_port()
        conf = os.path.join(d, "rabbitmq.conf")
        with open(conf, "w") as f:
            f.write(f"listeners.tcp.default = 127.0.0.1:{amqp}\n"
                    f"mqtt.listeners.tcp.default = 127.0.0.1:{mqtt}\n"
                    "mqtt.allow_anonymous = true\n"
                    f"web_mqtt.tcp.port = {ws}\nweb_mqtt.tcp.ip = 127.0.0.1\n"
                    "loopback_users = none\n"
                    "log.console = false\nlog.file.level = info\n")
        nenv = dict(env, RABBITMQ_NODENAME=name, RABBITMQ_NODE_IP_ADDRESS="127.0.0.1", RABBITMQ_NODE_PORT=str(amqp),
                    RABBITMQ_DIST_PORT=str(dist), RABBITMQ_CONFIG_FILE=conf,
                    RABBITMQ_MNESIA_BASE=os.path.join(d, "mnesia"), RABBITMQ_LOG_BASE=os.path.join(d, "log"),
                    RABBITMQ_ENABLED_PLUGINS_FILE=plugins, RABBITMQ_PID_FILE=os.path.join(d, "pid"),
                    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=f"-setcookie {b.cookie} -kernel inet_dist_use_interface {{127,0,0,1}}",
                    RABBITMQ_CTL_ERL_ARGS=f"-setcookie {b.cookie}")
        log = os.path.join(d, "server.log")
        p = b.popen([os.path.join(base, "rabbitmq-server")], log, env=nenv)
        wait_port(mqtt, 120, p, f"RabbitMQ {name}", log)
        wait_port(ws, 30, p, f"RabbitMQ {name} (Web MQTT)", log)
        b.members.append(Member(name, mqtt, f"ws://127.0.0.1:{ws}/ws"))
        b.__dict__.setdefault("envs", []).append(nenv)
        names.append(name)
        if i > 1:
            ctl = [os.path.join(base, "rabbitmqctl"), "--erlang-cookie", b.cookie, "-n", name]
            for step in (["stop_app"], ["join_cluster", names[0]], ["start_app"]):
                r = subprocess.run(ctl + step, env=nenv, capture_output=True, text=True, timeout=120)
                if r.returncode != 0:
                    raise RuntimeError(f"rabbitmqctl {' '.join(step)} on {name}: {r.stdout}{r.stderr}")
            wait_port(mqtt, 60, p, f"RabbitMQ {name} after joining", log)
    if members > 1:
        r = subprocess.run([os.path.join(base, "rabbitmqctl"), "--erlang-cookie", b.cookie, "-n", names[0], "cluster_status"],
                           env=b.envs[0], capture_output=True, text=True, timeout=60)
        b.cluster_status = r.stdout
        if not all(n in r.stdout.split("Running Nodes")[-1].split("Versions")[0] for n in names):
            raise RuntimeError("RabbitMQ cluster did not form:\n" + r.stdout + r.stderr)
    return b


EJABBERD_YML = """hosts:
  - localhost
loglevel: info
log_rotate_count: 0
certfiles: []
define_macro: {{}}
auth_method: [internal]
allow_multiple_connections: true
listen:
  -
    port: {mqtt}
    ip: "127.0.0.1"
    module: mod_mqtt
  -
    port: {ws}
    ip: "127.0.0.1"
    module: ejabberd_http
    request_handlers:
      /mqtt: mod_mqtt
acl:
  local:
    user_regexp: ""
access_rules:
  local:
    allow: all
modules:
  mod_mqtt:
{mod_mqtt_extra}    access_subscribe:
      "#": all
    access_publish:
      "#": all
"""


def start_ejabberd(b, members=2, mod_mqtt_extra=""):
    """An ejabberd cluster of `members` nodes (mod_mqtt on TCP and on WebSocket /mqtt), the
    second joined to the first with ejabberd_admin:join_cluster (what `ejabberdctl join_cluster`
    calls). Started with erl directly: Debian's ejabberdctl would run it as the ejabberd user
    with /etc/ejabberd and /var/lib/ejabberd."""
    env = _epmd(b)
    # Debian installs ejabberd's applications in /usr/lib/<triplet>/ejabberd-<version>/
    env["ERL_LIBS"] = ":".join(sorted({os.path.dirname(p) for p in glob.glob("/usr/lib/*-linux-gnu*/ejabberd-*")}))
    names = []
    for i in range(1, members + 1):
        name = f"ejabberd{i}@localhost"
        d = os.path.join(b.work, f"ejabberd{i}")
        os.makedirs(os.path.join(d, "spool"))
        mqtt, ws, dist = free_port(), free_port(), free_port()
        conf = os.path.join(d, "ejabberd.yml")
        with open(conf, "w") as f:
            f.write(EJABBERD_YML.format(mqtt=mqtt, ws=ws, mod_mqtt_extra=mod_mqtt_extra))
        log = os.path.join(d, "ejabberd.log")
        nenv = dict(env, EJABBERD_CONFIG_PATH=conf, EJABBERD_LOG_PATH=log, ERL_CRASH_DUMP=os.path.join(d, "erl_crash.dump"))
        cmd = ["erl", "-noinput", "-sname", name, "-setcookie", b.cookie,
               "-kernel", "inet_dist_use_interface", "{127,0,0,1}",
               "-kernel", "inet_dist_listen_min", str(dist), "-kernel", "inet_dist_listen_max", str(dist),
               "-mnesia", "dir", f'"{os.path.join(d, "spool")}"', "-s", "ejabberd"]
        p = b.popen(cmd, os.path.join(d, "erl.out"), env=nenv, cwd=d)
        wait_port(mqtt, 120, p, f"ejabberd {name}", log)
        b.members.append(Member(name, mqtt, f"ws://127.0.0.1:{ws}/mqtt"))
        names.append(name)
        b.__dict__.setdefault("envs", []).append(nenv)
        if i > 1:
            out = _erl_eval(nenv, b.cookie,
                            f"io:format(\"~p~n\", [rpc:call('{name}', ejabberd_admin, join_cluster, [<<\"{names[0]}\">>])]), halt().",
                            timeout=180)
            if "ok" not in out.split():
                raise RuntimeError(f"ejabberd join_cluster on {name}: {out}")
            wait_port(mqtt, 120, p, f"ejabberd {name} after joining", log)
    # mod_mqtt takes no anonymous clients: every client signs in as a user of the host
    # (the users table is in Mnesia, so registered once it holds on every member)
    b.username, b.password = "pacer", secrets.token_hex(8)
    out = _erl_eval(env, b.cookie, f"io:format(\"~p~n\", [rpc:call('{names[0]}', ejabberd_auth, try_register, "
                                   f"[<<\"{b.username}\">>, <<\"localhost\">>, <<\"{b.password}\">>])]), halt().")
    if "ok" not in out:
        raise RuntimeError("ejabberd: registering the MQTT user failed: " + out)
    if members > 1:
        out = _erl_eval(env, b.cookie, f"io:format(\"~p~n\", [rpc:call('{names[0]}', mnesia, system_info, [running_db_nodes])]), halt().")
        b.cluster_status = out
        if not all(n in out for n in names):
            raise RuntimeError("ejabberd cluster did not form: " + out)
    return b


def start(kind, members=2, venv_bin=os.path.dirname(sys.executable)):
    """Starts the broker `kind` (a cluster of `members` for the Erlang ones); on any failure
    what was started is stopped again before the error goes on."""
    b = Broker(kind, _work(kind.split("-")[0]))
    try:
        if kind == "mosquitto":
            return start_mosquitto(b)
        if kind == "amqtt":
            return start_amqtt(b, venv_bin)
        if kind == "amqtt-anon":
            return start_amqtt(b, venv_bin, anonymous=True)
        if kind == "rabbitmq":
            return start_rabbitmq(b, members)
        if kind == "ejabberd":
            return start_ejabberd(b, members)
        raise ValueError(kind)
    except BaseException:
        b.stop()
        raise
