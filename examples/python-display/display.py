#!/usr/bin/env python3
"""A 30-line Pacer display: one timer's plain retained topics as a coloured line in a terminal.

Usage: python3 display.py [--host 127.0.0.1] [--port 1883] [--base pacer/gym] [--timer main]
Needs paho-mqtt 2 (pip install -r requirements.txt). See docs/displays.md for the pattern.
"""
import argparse

COLOURS = {"work": "32", "rest": "31", "set_rest": "31", "prepare": "33", "paused": "34", "expired": "97;41"}


def frame(shown):
    """The line for the values received so far (topic leaf -> payload text), in colour."""
    s = shown
    rounds = f"  round {s['round']}/{s['rounds']}" if s["rounds"] not in ("", "1") else ""
    text = "NODE OFFLINE" if s.get("status") == "offline" else f"{s['phase'].upper():>9} {s['display']:>8}{rounds}"
    return f"\x1b[{COLOURS.get(s['phase'], '0')}m{text}\x1b[0m"


if __name__ == "__main__":
    import paho.mqtt.client as mqtt  # here, so frame() can be tested without paho

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default in (("--host", "127.0.0.1"), ("--port", "1883"), ("--base", "pacer/gym"), ("--timer", "main")):
        parser.add_argument(flag, default=default)
    args = parser.parse_args()
    topics = {f"{args.base}/timers/{args.timer}/{leaf}": leaf for leaf in ("display", "phase", "round", "rounds")}
    topics[f"{args.base}/status"] = "status"
    shown = {"display": "-:--", "phase": "idle", "round": "", "rounds": "", "status": ""}

    def on_connect(client, userdata, flags, reason, properties):
        client.subscribe([(topic, 1) for topic in topics])  # here, so a reconnect subscribes again

    def on_message(client, userdata, message):
        shown[topics[message.topic]] = message.payload.decode()  # retained: right at power-on
        print(f"\r\x1b[K{frame(shown)}", end="", flush=True)

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.on_connect, client.on_message = on_connect, on_message
    client.connect(args.host, int(args.port))
    client.loop_forever()
