# The blueprints of examples/home-assistant/ in the real Home Assistant of
# Tests/extra/home-assistant, which runs this file in its own scope (its node, broker, Home
# Assistant and helpers: http, state, pacer, wait_for, fail). A phone of the companion app is
# registered through mobile_app's own API and listens on its local push channel (what the app
# does while connected), so a notification is checked as the phone receives it; a button
# pressed on it is the app's own `fire_event` webhook call; the media player is Home
# Assistant's `universal` one over an input_number, its volume timeline read from
# state_changed events.
import statistics

WS = [os.path.join(venv, "bin", "python"), os.path.join(root, "Tests", "extra", "home-assistant.d", "ws.py"), url, token]


def ws_call(command):
    out = subprocess.run(WS + ["call", json.dumps(command)], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        fail(f"websocket {command.get('type')}: {out.stdout} {out.stderr[-2000:]}")
    return json.loads(out.stdout)["result"]


def publish(topic, payload):
    subprocess.run(["mosquitto_pub", "-p", str(mqtt_port), "-t", topic, "-q", "1", "-m", payload], check=True)


def node_state(timer):
    return json.loads(pacer("status", timer, "--json").stdout)


# 1. The blueprints import: Home Assistant lists them without an error.
listed = ws_call({"type": "blueprint/list", "domain": "automation"})
ours = {path: b for path, b in listed.items() if path.startswith("pacer/")}
bad = {path: b.get("error") for path, b in ours.items() if "error" in b}
if len(ours) != 3 or bad:
    fail(f"the blueprints did not import: {sorted(ours)} {bad}")
print(f"blueprints imported: {sorted((p, b['metadata']['name']) for p, b in ours.items())}", flush=True)

# 2. A phone: the companion app's registration, then its local push channel.
reg = http("POST", "/api/mobile_app/registrations", {
    "device_id": "pacer-test-phone", "app_id": "io.pacer.test", "app_name": "Pacer test", "app_version": "1.0",
    "device_name": "Coach phone", "manufacturer": "Pacer", "model": "Test", "os_name": "Android", "os_version": "14",
    "supports_encryption": False, "app_data": {"push_websocket_channel": True}}, token)
webhook = reg["webhook_id"]
devices = ws_call({"type": "config/device_registry/list"})
phone = next((d["id"] for d in devices if d["name"] == "Coach phone"), None)
if not phone:
    fail("the registered phone is not a device")
watch_log = os.path.join(work, "phone.jsonl")
player = "media_player.gym_music"
procs.append(subprocess.Popen(WS + ["watch", webhook, player, watch_log], stderr=open(os.path.join(work, "ws.err"), "w")))


def watched(kind):
    if not os.path.exists(watch_log):
        return []
    return [r for r in map(json.loads, open(watch_log).read().splitlines()) if r["kind"] == kind]


wait_for("the phone's push channel", lambda: any(r["id"] == 1 and r["success"] for r in watched("result")), timeout=30)

# 3. Timers: a rest after Squats before Rows that is ready again after Acknowledge, and a
# circuit whose rest leads into Rows.
for payload in ({"action": "create", "timer": "bench", "name": "Bench rest",
                 "spec": {"kind": "rest", "duration": "2s", "exercise": "Squats", "next": "Rows", "after_ack": "ready"}},
                {"action": "create", "timer": "circuit", "name": "Circuit",
                 "spec": {"kind": "interval", "work": "2s", "rest": "1s", "rounds": 1, "exercises": ["Squats", "Rows"]}}):
    publish(f"pacer/{node}/cmd", json.dumps(payload))
wait_for("the timers' event entities", lambda: state("event.bench_rest_event") and state("event.circuit_event")
         and state("sensor.bench_rest_next_exercise"), timeout=60)

automations = [
    {"id": "pacer_bench_phones", "alias": "Pacer bench rest to phones",
     "use_blueprint": {"path": "pacer/pacer_notify_phones.yaml", "input": {
         "timer_event": "event.bench_rest_event", "phones": [phone], "moments": ["rest_over", "expired"],
         "page_url": "https://pacer.local/", "snooze_seconds": 120}}},
    {"id": "pacer_circuit_phones", "alias": "Pacer circuit to phones",
     "use_blueprint": {"path": "pacer/pacer_notify_phones.yaml", "input": {
         "timer_event": "event.circuit_event", "phones": [phone], "moments": ["rest_over"]}}},
    {"id": "pacer_duck", "alias": "Pacer ducks the music",
     "use_blueprint": {"path": "pacer/pacer_duck_media_player.yaml", "input": {
         "cue_topic": f"pacer/{node}/cue_ahead", "player": player, "duck_volume": 20, "hold_ms": 300}}},
]
with open(os.path.join(ha_config, "automations.yaml"), "w") as f:
    json.dump(automations, f)  # JSON is YAML
http("POST", "/api/services/automation/reload", {}, token)
for a in ("automation.pacer_bench_rest_to_phones", "automation.pacer_circuit_to_phones", "automation.pacer_ducks_the_music"):
    wait_for(f"{a} on", lambda: state(a)["state"] == "on", timeout=30)
print("automations from the blueprints loaded", flush=True)


def notifications_since(n, titled=True):
    """The notifications after the first n; `titled`: not the clear_notification commands."""
    return [r for r in watched("notification")[n:] if not titled or "title" in r["data"]]


# 4. The rest expires: the phone is told "Rest over — next: Rows" with three buttons and a link.
seen = len(watched("notification"))
publish(f"pacer/{node}/timers/bench/cmd", "start")
got = wait_for("the phone's notification", lambda: notifications_since(seen), timeout=30)[0]["data"]
want_actions = [("PACER:ACK:pacer/hatest:bench", "Acknowledge"), ("PACER:SNOOZE30:pacer/hatest:bench", "+30 s"),
                ("PACER:SNOOZE:pacer/hatest:bench", "Snooze")]
extra = got.get("data") or {}
actions = [(a.get("action"), a.get("title")) for a in extra.get("actions", [])]
link = "https://pacer.local/?node=hatest&timer=bench"
if (got.get("title") != "Rest over — next: Rows" or "Squats" not in got.get("message", "") or actions != want_actions
        or extra.get("url") != link or extra.get("clickAction") != link or extra.get("tag") != "pacer-pacer-hatest-bench"):
    fail(f"the notification of the expired rest: {json.dumps(got)}")
print(f"expired rest → phone: {got['title']!r} / {got['message']!r}, buttons {[t for _, t in actions]}, link {link}", flush=True)


def press(action):
    """The companion app's own call when a notification's button is pressed."""
    http("POST", f"/api/webhook/{webhook}", {"type": "fire_event", "data": {
        "event_type": "mobile_app_notification_action", "event_data": {"action": action, "tag": "pacer-pacer-hatest-bench"}}})


# 5. Acknowledge on the phone: the node acknowledges; with after_ack ready it is idle at 2 s.
seen = len(watched("notification"))
press(want_actions[0][0])
st = wait_for("the rest acknowledged from the phone", lambda: (lambda s: s if s["status"] == "idle" else None)(node_state("bench")), timeout=20)
if st.get("remaining_ms") != 2000:
    fail(f"after Acknowledge the rest should be ready at its full 2 s: {st}")
cleared = wait_for("the notification cleared on the phone", lambda: [n for n in notifications_since(seen, titled=False)
                   if n["data"].get("message") == "clear_notification"], timeout=20)
print(f"Acknowledge on the phone → node idle at {st['remaining_ms']} ms (after_ack ready); the phone's notification cleared "
      f"(tag {cleared[0]['data'].get('data', {}).get('tag')})", flush=True)

# 6. +30 s on the phone: the expired rest runs again for 30 s (snooze: an expired timer takes no adjust).
seen = len(watched("notification"))
publish(f"pacer/{node}/timers/bench/cmd", "start")
wait_for("the second expiry's notification", lambda: [n for n in notifications_since(seen) if n["data"].get("title", "").startswith("Rest over")], timeout=30)
press(want_actions[1][0])
st = wait_for("the rest running again after +30 s", lambda: (lambda s: s if s["status"] == "running" else None)(node_state("bench")), timeout=20)
if not 25000 < st["remaining_ms"] <= 30000:
    fail(f"+30 s should give the expired rest 30 s: {st}")
# A button of another timer (or node) is not this automation's: nothing happens.
rev = st["revision"]
press("PACER:ACK:pacer/othernode:bench")
time.sleep(2)
if node_state("bench")["revision"] != rev:
    fail("a button naming another node changed this timer")
publish(f"pacer/{node}/timers/bench/cmd", "cancel")
print(f"+30 s on the phone → running with {st['remaining_ms']} ms; another node's button ignored", flush=True)

# 7. An interval's rest ends: "Rest over — next: Rows" with +30 s and Pause.
seen = len(watched("notification"))
publish(f"pacer/{node}/timers/circuit/cmd", "start")
got = wait_for("the circuit's rest-over notification", lambda: notifications_since(seen), timeout=30)[0]["data"]
actions = [a.get("title") for a in (got.get("data") or {}).get("actions", [])]
if got.get("title") != "Rest over — next: Rows" or actions != ["+30 s", "Pause"] or "url" in (got.get("data") or {}):
    fail(f"the circuit's rest-over notification: {json.dumps(got)}")
# Its +30 s adds to the work now running (Rows), its Pause pauses it.
press("PACER:ADD30:pacer/hatest:circuit")
st = wait_for("+30 s on the running circuit", lambda: (lambda s: s if s["status"] == "running" and s["remaining_ms"] > 5000 else None)(node_state("circuit")), timeout=20)
if not (st["label"] == "Rows" and 28000 < st["remaining_ms"] <= 32000):
    fail(f"+30 s should add 30 s to Rows: {st}")
press("PACER:PAUSE:pacer/hatest:circuit")
wait_for("the circuit paused from the phone", lambda: node_state("circuit")["status"] == "paused", timeout=20)
publish(f"pacer/{node}/timers/circuit/cmd", "cancel")
print(f"interval rest over → phone: {got['title']!r} / {got['message']!r}, buttons {actions}; +30 s → Rows has "
      f"{st['remaining_ms']} ms; Pause → paused", flush=True)

# 8. Ducking: the player plays at 0.8; cue-ahead messages as the node sends them (1 s
# ahead), a 3-2-1-go burst and a lone cue; its volume timeline from state_changed events.
wait_for("the player playing at 0.8", lambda: state(player)["state"] == "playing" and state(player)["attributes"].get("volume_level") == 0.8, timeout=20)
time.sleep(1)
LEAD, HOLD = 1000, 300
t0 = (int(time.time() * 1000) // 1000 + 2) * 1000
cues = [(t0 + 1000, "countdown", 150), (t0 + 2000, "countdown", 150), (t0 + 3000, "countdown", 150), (t0 + 4000, "work", 500),
        (t0 + 8000, "rest", 660)]
sent = []
for due, cue, duration in cues:
    while time.time() * 1000 < due - LEAD:
        time.sleep(0.002)
    sent.append(time.time() * 1000)
    publish(f"pacer/{node}/cue_ahead", json.dumps({"timer": "main", "cue": cue, "due_ms": due, "duration_ms": duration, "lead_ms": LEAD}))
wait_for("the volume restored after the last cue", lambda: [r for r in watched("state") if r["fired"] > t0 + 8000 and r["volume"] == 0.8], timeout=20)
timeline = [(r["fired"], r["volume"]) for r in watched("state") if r["fired"] > t0 - 1000]
changes = [(t, v) for i, (t, v) in enumerate(timeline) if i == 0 or v != timeline[i - 1][1]]
downs = [t for t, v in changes if v == 0.2]
ups = [t for t, v in changes if v == 0.8]
print("volume timeline (ms from t0): " + ", ".join(f"{t - t0:+.0f}:{v}" for t, v in changes), flush=True)
if len(downs) != 2 or len(ups) != 2:
    fail(f"two ducks (the burst, the lone cue) with two restores expected: {changes}")
groups = [(cues[0], cues[3], sent[0]), (cues[4], cues[4], sent[4])]
leads, lags, reacts = [], [], []
for (down, up), (first, last, sent_at) in zip(zip(downs, ups), groups):
    # Every cue of the group sounds while the music is down.
    for due, cue, duration in cues:
        if first[0] <= due <= last[0] and not (down < due and up > due + duration):
            fail(f"the {cue} cue at {due - t0:+d} ms sounded outside the duck {down - t0:+.0f}…{up - t0:+.0f} ms")
    leads.append(first[0] - down)
    lags.append(up - (last[0] + last[2] + HOLD))
    reacts.append(down - sent_at)
print(f"ducking: down {', '.join(f'{x:.0f}' for x in leads)} ms before the first cue (lead 1000 ms; "
      f"Home Assistant's reaction to the message {', '.join(f'{x:.0f}' for x in reacts)} ms); "
      f"restored {', '.join(f'{x:+.0f}' for x in lags)} ms after the cue's end + {HOLD} ms hold", flush=True)
if max(reacts) > 800 or max(abs(x) for x in lags) > 800:
    fail(f"Home Assistant's timing is off by more than 800 ms: reactions {reacts}, restores {lags}")
