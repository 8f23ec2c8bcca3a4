"""Home Assistant's WebSocket API for Tests/extra/home-assistant, run with the Home Assistant
venv's Python (its aiohttp). Two uses:

  ws.py URL TOKEN call '<json command>'          prints the command's result as JSON
  ws.py URL TOKEN watch WEBHOOK_ID ENTITY OUT    as a phone of the companion app: opens the
      local push channel of the mobile_app registration WEBHOOK_ID (what the app does while
      it is connected, instead of a push through the cloud) and writes every notification it
      gets to OUT, one JSON line each with its arrival (epoch ms); and every state change of
      ENTITY with the event's time_fired. Runs until killed.
  ws.py URL TOKEN events EVENT_TYPE OUT          writes every event of EVENT_TYPE (e.g.
      call_service) to OUT, one JSON line each with its time_fired (epoch ms). Runs until killed.
"""
import asyncio
import json
import sys
import time
from datetime import datetime

import aiohttp


async def connect(session, url, token):
    ws = await session.ws_connect(url.replace("http", "ws", 1) + "/api/websocket")
    assert (await ws.receive_json())["type"] == "auth_required"
    await ws.send_json({"type": "auth", "access_token": token})
    msg = await ws.receive_json()
    assert msg["type"] == "auth_ok", msg
    return ws


async def call(url, token, command):
    async with aiohttp.ClientSession() as session:
        ws = await connect(session, url, token)
        await ws.send_json(dict(command, id=1))
        while True:
            msg = await ws.receive_json()
            if msg.get("id") == 1 and msg.get("type") == "result":
                print(json.dumps(msg))
                return 0 if msg.get("success") else 1


async def watch(url, token, webhook_id, entity, out):
    async with aiohttp.ClientSession() as session:
        ws = await connect(session, url, token)
        await ws.send_json({"id": 1, "type": "mobile_app/push_notification_channel", "webhook_id": webhook_id})
        await ws.send_json({"id": 2, "type": "subscribe_events", "event_type": "state_changed"})
        with open(out, "a", buffering=1) as f:
            while True:
                msg = await ws.receive()
                if msg.type != aiohttp.WSMsgType.TEXT:
                    return
                data = json.loads(msg.data)
                now = time.time() * 1000
                if data.get("type") == "result":
                    f.write(json.dumps({"kind": "result", "id": data["id"], "success": data.get("success"), "at": now}) + "\n")
                elif data.get("type") == "event" and data["id"] == 1:
                    f.write(json.dumps({"kind": "notification", "at": now, "data": data["event"]}) + "\n")
                elif data.get("type") == "event" and data["id"] == 2:
                    ev = data["event"]
                    if ev["data"].get("entity_id") != entity:
                        continue
                    new = ev["data"].get("new_state") or {}
                    fired = datetime.fromisoformat(ev["time_fired"]).timestamp() * 1000
                    f.write(json.dumps({"kind": "state", "at": now, "fired": fired, "state": new.get("state"),
                                        "volume": (new.get("attributes") or {}).get("volume_level")}) + "\n")


async def events(url, token, event_type, out):
    async with aiohttp.ClientSession() as session:
        ws = await connect(session, url, token)
        await ws.send_json({"id": 1, "type": "subscribe_events", "event_type": event_type})
        with open(out, "a", buffering=1) as f:
            while True:
                msg = await ws.receive()
                if msg.type != aiohttp.WSMsgType.TEXT:
                    return
                data = json.loads(msg.data)
                if data.get("type") == "result":
                    f.write(json.dumps({"kind": "result", "id": data["id"], "success": data.get("success")}) + "\n")
                elif data.get("type") == "event":
                    ev = data["event"]
                    fired = datetime.fromisoformat(ev["time_fired"]).timestamp() * 1000
                    f.write(json.dumps({"kind": "event", "at": time.time() * 1000, "fired": fired, "data": ev["data"]}) + "\n")


if __name__ == "__main__":
    url, token, what = sys.argv[1:4]
    if what == "call":
        sys.exit(asyncio.run(call(url, token, json.loads(sys.argv[4]))))
    if what == "events":
        asyncio.run(events(url, token, *sys.argv[4:6]))
        sys.exit(0)
    asyncio.run(watch(url, token, *sys.argv[4:7]))
