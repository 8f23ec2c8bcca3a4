#!/usr/bin/env python3
"""Bluetooth heart-rate straps to MQTT, for Pacer (see README.md).

    hr_bridge.py --broker mqtt://localhost:1883 --strap C8:3A:1B:2C:3D:4E=alice --strap "Polar H10 1A2B3C4D=bob"

Every option can also come from the environment (HR_BRIDGE_BROKER, ...; `--help` lists them).
Exit status: 0 after SIGTERM or Ctrl-C, 2 for a bad option.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import signal
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bridge import (  # noqa: E402
    Bridge,
    BrokerSettings,
    MqttLink,
    StrapSelection,
    UsageError,
    check_topic_prefix,
)

log = logging.getLogger("hr-bridge")


def host_level() -> str:
    """This machine's name as a topic level (hr-bridge/<host>)."""
    return re.sub(r"[^a-z0-9_-]", "-", socket.gethostname().split(".")[0].lower()) or "local"


def parse_args(argv: list[str], env: dict[str, str]) -> argparse.Namespace:
    host = host_level()
    p = argparse.ArgumentParser(
        prog="hr_bridge.py",
        description="Publishes the readings of Bluetooth heart-rate straps (Heart Rate service 0x180D) to MQTT.",
        epilog="Environment: HR_BRIDGE_BROKER, HR_BRIDGE_USERNAME, HR_BRIDGE_PASSWORD (the password itself), "
               "HR_BRIDGE_PASSWORD_FILE, HR_BRIDGE_CA_FILE, HR_BRIDGE_PREFIX, HR_BRIDGE_STRAPS (space-separated "
               "--strap values), HR_BRIDGE_ADAPTER, HR_BRIDGE_LOG_LEVEL stand for the options.",
    )
    p.add_argument("--broker", default=env.get("HR_BRIDGE_BROKER", "mqtt://localhost:1883"),
                   help="mqtt://[user[:password]@]host[:port] or mqtts://... (default: %(default)s)")
    p.add_argument("--username", default=env.get("HR_BRIDGE_USERNAME"), help="broker user name")
    p.add_argument("--password-file", default=env.get("HR_BRIDGE_PASSWORD_FILE"),
                   help="a file whose first line is the broker password (or set HR_BRIDGE_PASSWORD)")
    p.add_argument("--ca-file", default=env.get("HR_BRIDGE_CA_FILE"), help="CA certificates for mqtts:// (default: the system's)")
    p.add_argument("--client-id", default=f"hr-bridge-{host}", help="MQTT client id (default: %(default)s)")
    p.add_argument("--prefix", default=env.get("HR_BRIDGE_PREFIX", "hr"),
                   help="readings go to PREFIX/STRAP (default: %(default)s)")
    p.add_argument("--status-topic", default=f"hr-bridge/{host}",
                   help="STATUS/status is online/offline, STATUS/straps/STRAP each strap's state (default: %(default)s)")
    p.add_argument("--format", choices=["json", "plain"], default="json",
                   help="json: {\"bpm\":142,\"contact\":true,\"rr_ms\":[...],...}; plain: 142 (default: %(default)s)")
    p.add_argument("--strap", action="append", default=(env.get("HR_BRIDGE_STRAPS") or "").split(),
                   metavar="MATCH[=ID]",
                   help="a strap to take: its Bluetooth address or exact advertised name, with the id its topic "
                        "gets (default id: the address without colons). Repeat for more. None: every strap found")
    p.add_argument("--all", action="store_true", help="with --strap: take the other straps found too")
    p.add_argument("--adapter", default=env.get("HR_BRIDGE_ADAPTER"), help="the Bluetooth adapter, e.g. hci1 (default: the first)")
    p.add_argument("--scan-seconds", type=float, default=5.0, help="length of a scan (default: %(default)s)")
    p.add_argument("--silence", type=float, default=15.0,
                   help="reconnect to a strap that sends nothing for this many seconds (default: %(default)s)")
    p.add_argument("--log-level", default=env.get("HR_BRIDGE_LOG_LEVEL", "info"),
                   choices=["debug", "info", "warning", "error"])
    return p.parse_args(argv)


def settings_from(args: argparse.Namespace, env: dict[str, str]) -> tuple[BrokerSettings, StrapSelection]:
    password = env.get("HR_BRIDGE_PASSWORD")
    if args.password_file:
        try:
            with open(args.password_file, encoding="utf-8") as f:
                password = f.readline().rstrip("\r\n")
        except OSError as e:
            raise UsageError(f"--password-file {args.password_file}: cannot read it: {e.strerror}") from None
    broker = BrokerSettings.from_url(args.broker, username=args.username, password=password,
                                     ca_file=args.ca_file, client_id=args.client_id)
    if broker.password is not None and broker.username is None:
        raise UsageError("a broker password is set but no user name: add --username (or HR_BRIDGE_USERNAME)")
    check_topic_prefix(args.prefix, "--prefix")
    check_topic_prefix(args.status_topic, "--status-topic")
    if args.prefix == args.status_topic or args.status_topic.startswith(args.prefix + "/"):
        raise UsageError(f"--status-topic {args.status_topic!r} lies under --prefix {args.prefix!r}: a pattern "
                         f"{args.prefix}/+ would take the bridge's own topics for straps; choose another")
    if args.scan_seconds <= 0 or args.silence < 3:
        raise UsageError("--scan-seconds must be above 0 and --silence at least 3")
    return broker, StrapSelection.parse(args.strap, args.all)


async def serve(link: MqttLink, source, bridge: Bridge) -> None:
    """Runs the strap source until SIGTERM or SIGINT; the broker link runs on paho's thread."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    link.start()
    try:
        await source.run(bridge)
    except asyncio.CancelledError:
        log.info("stopping")


def main(argv: list[str] | None = None, env: dict[str, str] | None = None) -> int:
    env = dict(os.environ if env is None else env)
    args = parse_args(sys.argv[1:] if argv is None else argv, env)
    try:
        broker, selection = settings_from(args, env)
    except UsageError as e:
        print(f"hr_bridge.py: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(message)s")
    try:
        from ble import BleSource
    except ImportError as e:
        print(f"hr_bridge.py: {e}: install the requirements into a venv first "
              "(python3 -m venv .venv && .venv/bin/pip install -r requirements.txt; see README.md)", file=sys.stderr)
        return 2
    link = MqttLink(broker, args.status_topic)
    bridge = Bridge(link, prefix=args.prefix, status_topic=args.status_topic, payload_format=args.format)
    link.on_connected = bridge.republish
    source = BleSource(selection, adapter=args.adapter, scan_seconds=args.scan_seconds, silence_seconds=args.silence)
    wanted = ", ".join([*selection.by_address, *selection.by_name]) or "every strap found"
    log.info("readings of %s%s go to %s/<strap> on %s", wanted, " and any other" if selection.take_all and
             (selection.by_address or selection.by_name) else "", args.prefix, link.where)
    try:
        asyncio.run(serve(link, source, bridge))
    except UsageError as e:
        print(f"hr_bridge.py: {e}", file=sys.stderr)
        return 2
    finally:
        link.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
