"""The bridge behind the radio: strap events in, MQTT messages out. No Bluetooth here.

A strap source (ble.py's `BleSource` on a real adapter, a fake one in the tests) reports to a
`StrapSink`: a strap connected, it notified a Heart Rate Measurement (the raw bytes), it was
lost. `Bridge` is that sink: it decodes each notification (hr_decode.py), decides what to
publish and hands it to an `MqttLink` (paho-mqtt), which owns the broker connection.

Topics (see README.md):

    <prefix>/<strap>             each reading, QoS 0, not retained: JSON
                                 {"bpm":142,"contact":true,"rr_ms":[...],"energy_kj":null,"at_ms":...}
                                 or the plain bpm (--format plain)
    <status>/status              online / offline (the last will), retained
    <status>/straps/<strap>      the strap's state as JSON, retained (with its battery, where
                                 the strap has the Battery Service: battery.py)

Threading: the strap source calls the sink on the asyncio thread; paho's network thread calls
`MqttLink`'s callbacks, which call back into `Bridge.republish` on connect. `Bridge` guards its
strap table with a lock; paho's `publish` is safe from any thread.
"""
from __future__ import annotations

import json
import logging
import re
import socket
import ssl
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol
from urllib.parse import unquote, urlsplit

from hr_decode import DecodeError, decode_measurement

log = logging.getLogger("hr-bridge")

# A strap id is one topic level, spelled like a Pacer timer id, so it works as an athlete id too.
STRAP_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# A topic prefix: one or more levels, no wildcards, no empty level.
TOPIC_PREFIX = re.compile(r"^[^/+#\x00]+(/[^/+#\x00]+)*$")


class UsageError(ValueError):
    """A bad option or setting; the message says which and what is expected."""


def strap_id_from_address(address: str) -> str:
    """The default strap id: the address in lower case with its separators dropped
    (`C8:3A:1B:2C:3D:4E` -> `c83a1b2c3d4e`; a macOS device UUID keeps its 32 hex digits)."""
    sid = re.sub(r"[^a-z0-9]", "", address.lower())[:64]
    if not sid:
        raise UsageError(f"cannot make a strap id from the address {address!r}")
    return sid


def check_strap_id(sid: str) -> str:
    if not STRAP_ID.match(sid):
        raise UsageError(
            f"strap id {sid!r} is not usable as a topic level: use 1-64 characters "
            "a-z, 0-9, _ and -, starting with a letter or digit (e.g. alice, strap-3)"
        )
    return sid


def check_topic_prefix(prefix: str, option: str) -> str:
    if not TOPIC_PREFIX.match(prefix):
        raise UsageError(f"{option} {prefix!r} is not a usable topic prefix: no + or #, no empty level, no leading or trailing /")
    return prefix


@dataclass(frozen=True)
class Strap:
    """A strap as the source found it: `id` is its topic level."""

    id: str
    address: str
    name: Optional[str] = None


class StrapSink(Protocol):
    """What a strap source reports. Called on the source's thread; must not block."""

    def strap_connected(self, strap: Strap, location: Optional[str]) -> None: ...

    def strap_notification(self, strap: Strap, data: bytes) -> None: ...

    def strap_lost(self, strap: Strap, reason: str) -> None: ...

    def strap_battery(self, strap: Strap, percent: int) -> None: ...


class StrapSource(Protocol):
    """Finds straps and reports them to a sink until cancelled (ble.py: `BleSource`)."""

    async def run(self, sink: StrapSink) -> None: ...


@dataclass
class StrapSelection:
    """Which straps to take and their ids: `--strap MATCH[=ID]` options, `--all`.

    MATCH is a Bluetooth address (any case) or the exact advertised name. With no `--strap`,
    every strap found is taken.
    """

    by_address: dict[str, Optional[str]] = field(default_factory=dict)
    by_name: dict[str, Optional[str]] = field(default_factory=dict)
    take_all: bool = True

    ADDRESS = re.compile(r"^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$|^[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}$")

    @classmethod
    def parse(cls, specs: list[str], take_all: bool) -> "StrapSelection":
        sel = cls(take_all=take_all or not specs)
        ids: dict[str, str] = {}
        for spec in specs:
            match, sep, sid = spec.rpartition("=")
            if not sep:
                match, sid = spec, ""
            match = match.strip()
            if not match:
                raise UsageError(f"--strap {spec!r}: expected ADDRESS[=ID] or NAME[=ID], e.g. --strap C8:3A:1B:2C:3D:4E=alice")
            chosen = check_strap_id(sid) if sid else None
            if chosen is not None:
                if chosen in ids:
                    raise UsageError(f"--strap {spec!r}: the id {chosen!r} is given to {ids[chosen]!r} already; each strap needs its own")
                ids[chosen] = match
            if cls.ADDRESS.match(match):
                sel.by_address[match.upper()] = chosen
            else:
                sel.by_name[match] = chosen
        return sel

    def strap_for(self, address: str, name: Optional[str]) -> Optional[Strap]:
        """The strap a found device is, with its id, or None when it is not wanted."""
        key = address.upper()
        if key in self.by_address:
            chosen = self.by_address[key]
        elif name is not None and name in self.by_name:
            chosen = self.by_name[name]
        elif self.take_all:
            chosen = None
        else:
            return None
        return Strap(id=chosen or strap_id_from_address(address), address=address, name=name)


# --- MQTT -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerSettings:
    host: str = "localhost"
    port: int = 1883
    tls: bool = False
    username: Optional[str] = None
    password: Optional[str] = None
    ca_file: Optional[str] = None
    client_id: str = ""
    keepalive: int = 30

    @classmethod
    def from_url(cls, url: str, **overrides) -> "BrokerSettings":
        """`mqtt://[user[:password]@]host[:port]` or `mqtts://...` (TLS, port 8883 by default)."""
        parts = urlsplit(url if "://" in url else f"mqtt://{url}")
        if parts.scheme not in ("mqtt", "mqtts", "tcp", "ssl"):
            raise UsageError(f"--broker {url!r}: the scheme must be mqtt:// or mqtts://")
        if not parts.hostname:
            raise UsageError(f"--broker {url!r}: no host; expected e.g. mqtt://localhost:1883")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise UsageError(f"--broker {url!r}: expected mqtt://host[:port] with nothing after the port")
        try:
            port = parts.port
        except ValueError:
            raise UsageError(f"--broker {url!r}: the port must be a number from 1 to 65535") from None
        tls = parts.scheme in ("mqtts", "ssl")
        settings = dict(
            host=parts.hostname,
            port=port or (8883 if tls else 1883),
            tls=tls,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
        )
        settings.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**settings)


class MqttLink:
    """One paho-mqtt connection: connects in the background, reconnects with a capped backoff
    (1 s doubling to 30 s), `offline` as its last will and `online` on every connect.

    Threading: paho's network thread (loop_start) runs the callbacks; `publish` may be called
    from any thread. A QoS 0 message published while disconnected is dropped, not queued: a
    heart rate delivered late would read as fresh.
    """

    def __init__(self, settings: BrokerSettings, status_topic: str, on_connected: Callable[[], None] = lambda: None):
        import paho.mqtt.client as mqtt  # here, so that hr_decode and the selection need no paho

        self._mqtt = mqtt
        self.settings = settings
        self.status_topic = f"{status_topic}/status"
        self.on_connected = on_connected
        self.connected = threading.Event()
        self._stopping = False
        self._last_problem: Optional[str] = None
        client = mqtt.Client(
            callback_api_version=mqtt.CallbackAPIVersion.VERSION2,
            client_id=settings.client_id,
            protocol=mqtt.MQTTv311,
        )
        client.will_set(self.status_topic, "offline", qos=1, retain=True)
        if settings.username is not None:
            client.username_pw_set(settings.username, settings.password)
        if settings.tls:
            client.tls_set(ca_certs=settings.ca_file, cert_reqs=ssl.CERT_REQUIRED)
        client.reconnect_delay_set(min_delay=1, max_delay=30)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_connect_fail = self._on_connect_fail
        self.client = client

    @property
    def where(self) -> str:
        return f"{'mqtts' if self.settings.tls else 'mqtt'}://{self.settings.host}:{self.settings.port}"

    def start(self) -> None:
        """Starts connecting in the background; never raises for an unreachable broker."""
        try:
            self.client.connect_async(self.settings.host, self.settings.port, keepalive=self.settings.keepalive)
        except ValueError as e:
            raise UsageError(f"--broker {self.where}: {e}") from None
        self.client.loop_start()

    def stop(self, timeout: float = 3.0) -> None:
        """Publishes `offline`, disconnects, stops the network thread (bounded in time)."""
        self._stopping = True
        if self.connected.is_set():
            info = self.client.publish(self.status_topic, "offline", qos=1, retain=True)
            try:
                info.wait_for_publish(timeout)
            except (RuntimeError, ValueError):
                pass
        self.client.disconnect()
        self.client.loop_stop()

    def publish(self, topic: str, payload: str, qos: int, retain: bool) -> bool:
        """True when handed to the connection (QoS 0 while disconnected: dropped, False)."""
        if qos == 0 and not self.connected.is_set():
            return False
        info = self.client.publish(topic, payload, qos=qos, retain=retain)
        return info.rc == self._mqtt.MQTT_ERR_SUCCESS

    def _problem(self, text: str) -> None:
        if text != self._last_problem:  # said once until it changes, not every retry
            log.error("%s", text)
            self._last_problem = text

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        if reason_code.is_failure:
            self.connected.clear()
            name = str(reason_code)
            if name in ("Not authorized", "Bad user name or password"):
                advice = "check --username and the password (--password-file, HR_BRIDGE_PASSWORD or the URL)"
            else:
                advice = "check the broker's log"
            self._problem(f"the broker at {self.where} refused the connection: {name}; {advice}; retrying")
            return
        self._last_problem = None
        log.info("connected to the broker at %s", self.where)
        self.connected.set()
        client.publish(self.status_topic, "online", qos=1, retain=True)
        self.on_connected()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties):
        if self.connected.is_set() and not self._stopping:
            log.warning("lost the broker at %s (%s); reconnecting", self.where, reason_code)
        self.connected.clear()

    def _on_connect_fail(self, client, userdata):
        # paho calls this inside its `except OSError:`, so the error is at hand.
        error = sys.exc_info()[1]
        if isinstance(error, ssl.SSLError):
            text = (f"the TLS handshake with the broker at {self.where} failed ({getattr(error, 'verify_message', None) or error}): "
                    "give the broker's CA certificate with --ca-file, and a host name its certificate names")
        elif isinstance(error, socket.gaierror):
            text = f"cannot find the broker's host {self.settings.host!r} ({error.strerror}): check the address in --broker"
        elif isinstance(error, ConnectionRefusedError):
            text = f"nothing listens at {self.where}: is mosquitto running there, and is the port right?"
        else:
            text = f"cannot reach the broker at {self.where} ({error or 'connection failed'}): is it running, and the address right?"
        self._problem(text + " Retrying every 1-30 s")


# --- the bridge -----------------------------------------------------------------------------


@dataclass
class _StrapState:
    strap: Strap
    state: str = "connected"
    location: Optional[str] = None
    contact: Optional[bool] = None
    reason: Optional[str] = None
    malformed: int = 0
    battery_pct: Optional[int] = None


class Publisher(Protocol):
    def publish(self, topic: str, payload: str, qos: int, retain: bool) -> bool: ...


class Bridge:
    """The sink of strap events: decodes notifications and publishes readings and states.

    A reading is published when the strap has one: a strap that reports no skin contact, or a
    value of 0, has none, and nothing is published, so Pacer's node blanks the heart rate once
    its staleness window passes (it takes any number it is sent as fresh; there is no "stale"
    payload it reads). The strap's retained state says `"contact": false` meanwhile.
    """

    def __init__(self, publisher: Publisher, prefix: str = "hr", status_topic: str = "hr-bridge/local",
                 payload_format: str = "json", clock: Callable[[], float] = time.time):
        if payload_format not in ("json", "plain"):
            raise UsageError(f"--format {payload_format!r}: expected json or plain")
        self.publisher = publisher
        self.prefix = prefix
        self.status_topic = status_topic
        self.payload_format = payload_format
        self.clock = clock
        self._lock = threading.Lock()
        self._straps: dict[str, _StrapState] = {}

    def reading_topic(self, strap: Strap) -> str:
        return f"{self.prefix}/{strap.id}"

    def state_topic(self, strap: Strap) -> str:
        return f"{self.status_topic}/straps/{strap.id}"

    # StrapSink

    def strap_connected(self, strap: Strap, location: Optional[str]) -> None:
        with self._lock:
            self._straps[strap.id] = st = _StrapState(strap, location=location)
            payload = self._state_json(st)
        log.info("strap %s (%s%s) connected; readings on %s", strap.id, strap.address,
                 f", {strap.name}" if strap.name else "", self.reading_topic(strap))
        self.publisher.publish(self.state_topic(strap), payload, qos=1, retain=True)

    def strap_notification(self, strap: Strap, data: bytes) -> None:
        at_ms = int(self.clock() * 1000)
        try:
            m = decode_measurement(data)
        except DecodeError as e:
            with self._lock:
                st = self._straps.setdefault(strap.id, _StrapState(strap))
                st.malformed += 1
                first = st.malformed == 1
            if first or st.malformed % 100 == 0:
                log.warning("strap %s: notification %d ignored: %s", strap.id, st.malformed, e)
            return
        with self._lock:
            st = self._straps.setdefault(strap.id, _StrapState(strap))
            contact_changed = st.contact != m.contact
            st.contact = m.contact
            has_reading = m.contact is not False and m.bpm > 0
            state_payload = self._state_json(st) if contact_changed else None
        if state_payload is not None:
            if m.contact is False:
                log.info("strap %s: no skin contact; no readings until it has (wet the electrodes)", strap.id)
            self.publisher.publish(self.state_topic(strap), state_payload, qos=1, retain=True)
        if not has_reading:
            return
        if self.payload_format == "plain":
            payload = str(m.bpm)
        else:
            payload = json.dumps({
                "bpm": m.bpm,
                "contact": m.contact,
                "rr_ms": [round(x, 1) for x in m.rr_ms],
                "energy_kj": m.energy_kj,
                "at_ms": at_ms,
            }, separators=(",", ":"))
        self.publisher.publish(self.reading_topic(strap), payload, qos=0, retain=False)

    def strap_lost(self, strap: Strap, reason: str) -> None:
        with self._lock:
            st = self._straps.setdefault(strap.id, _StrapState(strap))
            st.state, st.reason, st.contact = "lost", reason, None
            payload = self._state_json(st)
        log.warning("strap %s (%s) lost: %s", strap.id, strap.address, reason)
        self.publisher.publish(self.state_topic(strap), payload, qos=1, retain=True)

    def strap_battery(self, strap: Strap, percent: int) -> None:
        """The strap's Battery Level (battery.py): its retained state again when it changed."""
        with self._lock:
            st = self._straps.setdefault(strap.id, _StrapState(strap))
            if st.battery_pct == percent:
                return
            st.battery_pct = percent
            payload = self._state_json(st)
        log.info("strap %s: battery %d %%", strap.id, percent)
        self.publisher.publish(self.state_topic(strap), payload, qos=1, retain=True)

    def republish(self) -> None:
        """Every strap's retained state again (after a broker reconnect)."""
        with self._lock:
            items = [(st.strap, self._state_json(st)) for st in self._straps.values()]
        for strap, payload in items:
            self.publisher.publish(self.state_topic(strap), payload, qos=1, retain=True)

    def _state_json(self, st: _StrapState) -> str:
        return json.dumps({
            "strap": st.strap.id,
            "address": st.strap.address,
            "name": st.strap.name,
            "state": st.state,
            "topic": self.reading_topic(st.strap),
            "location": st.location,
            "contact": st.contact,
            "reason": st.reason,
            "battery_pct": st.battery_pct,
        }, separators=(",", ":"))
