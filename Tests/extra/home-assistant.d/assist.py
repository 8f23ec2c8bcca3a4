# The spoken cues on a speaker (examples/home-assistant/pacer_announce.yaml) and the timers by
# voice (examples/home-assistant/pacer_assist/) in the real Home Assistant of
# Tests/extra/home-assistant, which runs this file in its own scope after blueprints.py (its
# node, broker, Home Assistant, helpers and the automations list). The speaker is a universal
# media player whose play_media goes to an input_text; every service call is read from
# Home Assistant's call_service events; the TTS engine is espeak-ng (a platform of the test's own).
# Assist is asked as a voice satellite asks it: the conversation API with the words said.
import math
import urllib.parse

# 1. Announcements: each `say` text to the speaker with announce, a late one not at all.
calls_log = os.path.join(work, "calls.jsonl")
procs.append(subprocess.Popen(WS + ["events", "call_service", calls_log], stderr=open(os.path.join(work, "ws-events.err"), "w")))


def calls(service):
    if not os.path.exists(calls_log):
        return []
    rows = [json.loads(l) for l in open(calls_log).read().splitlines()]
    return [r for r in rows if r["kind"] == "event" and f"{r['data']['domain']}.{r['data']['service']}" == service]


wait_for("the call_service listener", lambda: os.path.exists(calls_log) and open(calls_log).read().strip(), timeout=30)
automations.append({"id": "pacer_announce", "alias": "Pacer says the cues", "use_blueprint": {
    "path": "pacer/pacer_announce.yaml", "input": {
        "say_topic": f"pacer/{node}/timers/+/say", "players": ["media_player.gym_speaker"], "tts_engine": "say_espeak",
        "language": "en", "max_late_s": 3}}})
with open(os.path.join(ha_config, "automations.yaml"), "w") as f:
    json.dump(automations, f)
http("POST", "/api/services/automation/reload", {}, token)
wait_for("automation.pacer_says_the_cues on", lambda: state("automation.pacer_says_the_cues")["state"] == "on", timeout=30)
time.sleep(2)  # its MQTT subscription reaches the broker a moment after (a text before it is not heard)

def traces(automation_id):
    """The automation's last runs, as Home Assistant traced them (for a failure's message)."""
    runs = ws_call({"type": "trace/list", "domain": "automation", "item_id": automation_id})
    return json.dumps([{k: r.get(k) for k in ("state", "script_execution", "error", "last_step", "trigger")} for r in runs[-3:]])


lags = []
for text in ("Rest. Next: Swings", "Last round", "Work: Kettlebell swings & rows"):
    seen = len(calls("media_player.play_media"))
    due = int(time.time() * 1000)
    publish(f"pacer/{node}/timers/main/say", json.dumps({"timer": "main", "event": "phase", "text": text, "due_ms": due,
                                                          "at_ms": due, "lang": "en"}))
    for _ in range(40):
        if calls("media_player.play_media")[seen:]:
            break
        time.sleep(0.5)
    else:
        fail(f"no announcement of {text!r}; the automation's runs: {traces('pacer_announce')}")
    got = calls("media_player.play_media")[seen:][0]
    data = got["data"]["service_data"]
    want = "media-source://tts/say_espeak?message=" + urllib.parse.quote(text, safe="/") + "&language=en"
    if data.get("announce") is not True or data.get("media_content_id") != want or "media_player.gym_speaker" not in str(data.get("entity_id")):
        fail(f"the announcement of {text!r}: {json.dumps(data)} (wanted {want})")
    lags.append(got["fired"] - due)
wait_for("the speaker asked to play it", lambda: state("input_text.speaker_played")["state"].startswith("media-source://tts/say_espeak?message=Work"), timeout=20)
# The text made into speech: the media source resolves to the engine's audio.
resolved = ws_call({"type": "media_source/resolve_media", "media_content_id": want})
request = urllib.request.Request(url + resolved["url"], headers={"Authorization": f"Bearer {token}"})
with urllib.request.urlopen(request, timeout=30) as response:
    audio = response.read()
if len(audio) < 1000:
    fail(f"the announcement's speech: {len(audio)} bytes from {resolved}")
# A text that reaches Home Assistant 10 s after its cue, and one that is not text: never said.
seen = len(calls("media_player.play_media"))
old = int(time.time() * 1000) - 10_000
publish(f"pacer/{node}/timers/main/say", json.dumps({"timer": "main", "event": "phase", "text": "Too late", "due_ms": old, "at_ms": old}))
publish(f"pacer/{node}/timers/main/say", "not json")
time.sleep(3)
if calls("media_player.play_media")[seen:]:
    fail(f"a late text was announced: {calls('media_player.play_media')[seen:]}")
print(f"announcements: each text to the speaker with announce: true ({resolved['mime_type']}, {len(audio)} bytes of speech); "
      f"Home Assistant called play_media {', '.join(f'{x:.0f}' for x in lags)} ms after the cue's due_ms; a text 10 s late dropped", flush=True)

# 2. Assist. The package's sensor subscribes when its template is loaded: here Home Assistant
# started before its MQTT integration was added, so the template is loaded again now.
http("POST", "/api/services/template/reload", {}, token)
# A labelled interval called "Main clock" beside the paused kitchen timer.
publish(f"pacer/{node}/cmd", json.dumps({"action": "create", "timer": "main", "name": "Main clock",
                                         "spec": {"kind": "interval", "work": "40s", "rest": "20s", "rounds": 4,
                                                  "exercises": ["Burpees", "Swings"]}}))
wait_for("the package's Pacer timers sensor", lambda: f"pacer/{node}/main" in (state("sensor.pacer_timers") or {"attributes": {}})["attributes"].get("timers", {}), timeout=30)


def ask(text):
    r = http("POST", "/api/conversation/process", {"text": text, "language": "en"}, token)
    return r["response"]["speech"]["plain"]["speech"], r["response"]


def said_seconds(reply):
    """The seconds a reply says are left (`3 minutes 12 seconds left`)."""
    m = re.search(r"(?:(\d+) minutes?)?\s*(?:(\d+) seconds?)? (?:left|gone)", reply)
    return (int(m.group(1) or 0) * 60 + int(m.group(2) or 0)) if m else None


def node_left(timer):
    st = node_state(timer)
    return math.ceil(st["remaining_ms"] / 1000), st


import re  # noqa: E402

reply, response = ask("start tabata on the main clock")
print(f"Assist's answer: {json.dumps(response)[:1500]}", flush=True)
st = wait_for(f"Tabata running on main (Assist said {reply!r})", lambda: (lambda s: s if s["status"] == "running" and s.get("preset") == "tabata" else None)(node_state("main")), timeout=10)
if not reply.startswith("Main clock: ") or said_seconds(reply) is None:
    fail(f"'start tabata on the main clock' answered {reply!r}")
print(f"'start tabata on the main clock' → node runs {st.get('preset')} ({st['phase']}); Assist: {reply!r}", flush=True)

reply, _ = ask("pause the timer")
if not reply.startswith("Which timer?") or "Kitchen" not in reply or "Main clock" not in reply:
    fail(f"'pause the timer' with two timers under way answered {reply!r}")
print(f"'pause the timer' with the kitchen paused too → {reply!r}", flush=True)
publish(f"pacer/{node}/timers/kitchen/cmd", "cancel")
wait_for("the kitchen cancelled in the sensor", lambda: state("sensor.pacer_timers")["attributes"]["timers"][f"pacer/{node}/kitchen"]["status"] in ("cancelled", "idle"), timeout=20)

reply, _ = ask("pause the timer")
left, st = node_left("main")
if st["status"] != "paused" or said_seconds(reply) != left or "paused" not in reply:
    fail(f"'pause the timer': node {st['status']} with {left} s left; Assist said {reply!r}")
print(f"'pause the timer' → node paused with {left} s left; Assist: {reply!r}", flush=True)

reply, _ = ask("how long is left on the main clock")
if said_seconds(reply) != left:
    fail(f"'how long is left on the main clock' while paused at {left} s: {reply!r}")
reply, _ = ask("resume the main clock")
wait_for("main running again", lambda: node_state("main")["status"] == "running", timeout=10)
segment = node_state("main")["segment"]
reply, _ = ask("skip")
st = wait_for("the next segment", lambda: (lambda s: s if s["segment"] == segment + 1 else None)(node_state("main")), timeout=10)
if not reply.startswith("Main clock: "):
    fail(f"'skip' answered {reply!r}")
print(f"'resume the main clock', 'skip' → segment {segment} → {st['segment']} ({st['phase']}); Assist: {reply!r}", flush=True)

before = node_state("main")["remaining_ms"]
reply, _ = ask("add a minute")
st = wait_for("a minute added", lambda: (lambda s: s if s["remaining_ms"] > before + 50_000 else None)(node_state("main")), timeout=10)
reply2, _ = ask("how long is left")
left = math.ceil(node_state("main")["remaining_ms"] / 1000)
if abs(said_seconds(reply2) - left) > 1 or abs(said_seconds(reply) - left) > 2:
    fail(f"'add a minute' ({reply!r}) then 'how long is left' ({reply2!r}); the node has {left} s")
print(f"'add a minute' → the node's segment {before / 1000:.0f} s → {st['remaining_ms'] / 1000:.0f} s left; "
      f"'how long is left' → {reply2!r} (the node: {left} s)", flush=True)

reply, _ = ask("pause the garage timer")
if not reply.startswith("There is no timer called garage"):
    fail(f"an unknown timer: {reply!r}")
publish(f"pacer/{node}/timers/main/cmd", "cancel")
print(f"an unknown timer → {reply!r}", flush=True)
