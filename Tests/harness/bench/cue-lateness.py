#!/usr/bin/env python3
"""How late the node's speaker sounds its cues, beeps and speech in the same run, beside a floor.

    python3 Tests/harness/bench/cue-lateness.py [--binary .build/release/pacer] [--json FILE]
        [--segments 26] [--segment-seconds 3] [--floor-tones 40] [--record-latency-ms 2]
        [--wait-load 1.5 --wait-minutes 20] [--keep]

Build the binary first: `swift build -c release --product pacer` (the default --binary is
.build/release/pacer of this checkout).

Everything runs here on 127.0.0.1 and is stopped by its PID at the end:
  - a PulseAudio of its own (Debian's pulseaudio, user mode, no default.pa, a Unix socket in a
    temporary directory; as the user pulse when run as root) with one null sink, `speaker`
    (44.1 kHz mono), recorded from its monitor by `parec --raw --latency-msec=2` read here as
    it arrives;
  - a mosquitto on a free port, with `mosquitto_sub -v` on the timers' `event` and `say` topics;
  - `pacer run` with `sound: {device: pulse, volume: 100%, latency: 50ms, speech: {...}}`, its
    speech cache in the temporary directory, `timing.cues: [2, 1]`. The harness creates a
    program timer of --segments work segments of --segment-seconds, each with a short
    exercise label, waits until the cache directory holds every clip the program needs, and
    starts it: each segment starts with a spoken cue ("Work: Dip"), 2 s and 1 s before its end
    a countdown beep, and "Done" at the end. The defaults give 52 beeps and 27 spoken cues.

The floors, recorded by the same recorder on the same sink before the timer starts (the node is
running and idle then):
  - `alsa`: cue-floor.c (beside this file, compiled with cc against libasound): ALSA's `pulse`
    device opened once with the node's settings, each 1000 Hz tone placed at its instant from
    snd_pcm_delay, as the node's player places a cue; the cheapest way to do the node's work;
  - `paplay`: a Python scheduler that sleeps until each instant and starts `paplay` on a WAV of
    the same tone: what a plain player that opens a stream per sound achieves.

Lateness is a sound's onset in the recording (its first sample above 0.6 % of full scale after
20 ms of silence, searched from 80 ms before its nominal instant to 700 ms after) minus the
instant it was due: the event's `due_ms` for the node (so the node's configured `latency`, 50 ms,
is part of it), the scheduled instant for the floors.

The recording is placed on the wall clock by when its samples arrive: every read of parec's
output bounds when its last sample was mixed (no later than its arrival); the earliest of these
bounds in each 2 s of recording are fitted with a line (offset and drift), and their spread
around the line is printed. A null sink mixes ahead of its clock by up to its latency, which
the monitor's reader requests (`--record-latency-ms`, 2 ms by default; the table prints the
sink's latency while the node played): an onset can read early by up to that much. The C floor,
which places its tones exactly, shows what is left of it in its absolute p50 (a larger
--record-latency-ms moves it earlier by about as much). An onset is the instant PulseAudio mixed the sample into the sink; a
real card plays it after the sink's own latency, which the node's ALSA stream reports and the
node already allows for.

The `relative` figures take the alignment out altogether: each lateness minus the median
lateness of its group (all the node's cues, beeps and speech together; each floor on its own),
so a systematic difference between beeps and speech stays visible and only jitter remains.

Each detected sound is checked against what was due: a beep must be a pure tone at its cue's
pitch and a spoken cue must not be (a phrase whose clip was not ready beeps instead, and is
counted as such, not as speech), and must last its own length within 15 ms (a sound cut short,
or interrupted by a starved stream, is counted as broken; its lateness still counts). Cues whose
onset was not found are counted as missed, never dropped silently. p99 is the nearest-rank percentile: with fewer than 100 cues it is the maximum.

Exit 0 with the table printed (and --json FILE written), 1 when a step fails, 2 when a tool is
missing. The machine's load average is recorded at the start and at the end.
"""
import argparse
import array
import datetime
import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BASE = "pacer/cuebench"
TIMER = "cues"
RATE = 44100
THRESHOLD = 200  # 0.6 % of full scale: the null sink is digitally silent between sounds
SILENCE_MS = 20  # an onset follows this much silence
WINDOW_BEFORE_MS, WINDOW_AFTER_MS = 80, 700
LATENCY_MS = 50
LABELS = ["Dip", "Hop", "Sit", "Kick", "Row", "Push"]  # "Work: Dip" lasts 0.80-0.88 s with espeak-ng
# Each cue's first tone (docs/sound.md, "The cues"), to tell a beep from speech.
CUE_PITCH = {"work": 1320.0, "rest": 660.0, "countdown": 880.0, "finish": 880.0, "expired": 1760.0}
CUE_MS = {"work": 500, "rest": 660, "countdown": 150, "finish": 1020, "expired": 650}  # how long each sounds
FLOOR_PITCH, FLOOR_MS = 1000.0, 150
INTACT_MS = 15  # a sound is whole when it lasts its length within this
PROCS = []  # every process started, stopped by its PID at the end


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def start(args, **kw):
    proc = subprocess.Popen(args, **kw)
    PROCS.append(proc)
    return proc


def stop(proc, sig=signal.SIGTERM, timeout=10):
    if proc.poll() is None:
        os.kill(proc.pid, sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def free_port():
    return int(subprocess.run([sys.executable, os.path.join(REPO, "scripts", "free-port")],
                              capture_output=True, text=True, check=True).stdout)


def wait_port(port, proc, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args[0]} exited ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port}")


# ---------------------------------------------------------------- PulseAudio and its recorder

def start_pulseaudio(work):
    """A PulseAudio of its own with a null sink `speaker`; returns the socket path."""
    server = os.path.join(work, "native")
    home = os.path.join(work, "pulse-home")
    os.makedirs(home)
    as_user = []
    if os.geteuid() == 0:  # PulseAudio refuses root outside --system: run it as the user pulse
        as_user = ["setpriv", "--reuid=pulse", "--regid=pulse", "--init-groups"]
        shutil.chown(work, "pulse", "pulse")
        shutil.chown(home, "pulse", "pulse")
    pa_log = open(os.path.join(work, "pulseaudio.log"), "w")
    pa = start(as_user + [
        "pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--disable-shm=yes", "--use-pid-file=no",
        "--log-target=stderr", "--log-level=warning",
        "-L", f"module-native-protocol-unix socket={server} auth-anonymous=1",
        "-L", "module-null-sink sink_name=speaker rate=44100 channels=1 format=s16le",
    ], env=dict(os.environ, HOME=home, XDG_RUNTIME_DIR=home), stdout=pa_log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 10
    while not os.path.exists(server):
        if pa.poll() is not None or time.monotonic() > deadline:
            pa_log.flush()
            raise SystemExit("pulseaudio did not start:\n" + open(os.path.join(work, "pulseaudio.log")).read()[-2000:])
        time.sleep(0.05)
    return server


class Recorder:
    """parec on the sink's monitor, raw 16-bit mono; keeps every sample and, for every read,
    the wall-clock instant it arrived and how many samples had arrived by then."""

    def __init__(self, env, latency_ms):
        self.proc = start(["parec", "--device=speaker.monitor", "--raw", "--format=s16le", "--rate=44100",
                           "--channels=1", f"--latency-msec={latency_ms}"], env=env, stdout=subprocess.PIPE)
        self.data = bytearray()
        self.arrivals = []  # (wall seconds, samples received so far)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        fd = self.proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 65536)
            now = time.time()
            if not chunk:
                return
            self.data += chunk
            self.arrivals.append((now, len(self.data) // 2))

    def stop(self):
        stop(self.proc)
        self.thread.join(5)
        samples = array.array("h")
        samples.frombytes(bytes(self.data[:len(self.data) // 2 * 2]))
        return samples


def align(arrivals, bin_s=2.0):
    """Fits wall(n) = a + n * (1/RATE + b) to the earliest arrival bound in each bin of the
    recording; returns (a, b, spread_ms, bins) with the spread of those bounds around the line."""
    bins = {}
    for wall, n in arrivals:
        bound = wall - n / RATE  # sample 0 was mixed at or before this instant
        key = int(n / RATE / bin_s)
        if key not in bins or bound < bins[key][1]:
            bins[key] = (n, bound)
    points = sorted(bins.values())[1:]  # the first bin holds parec's start-up
    if len(points) < 3:
        raise SystemExit("the recording is too short to align")
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    residuals = [(y - (a + b * x)) * 1000 for x, y in zip(xs, ys)]
    return a, b, max(residuals) - min(residuals), len(points)


def sample_at(wall, a, b):
    return int(round((wall - a) / (1 / RATE + b)))


def wall_at(n, a, b):
    return a + n * (1 / RATE + b)


def find_onset(samples, nominal):
    """The first sample above THRESHOLD after SILENCE_MS of silence within the search window
    around sample index `nominal`; None when there is none."""
    lo = max(0, nominal - WINDOW_BEFORE_MS * RATE // 1000)
    hi = min(len(samples), nominal + WINDOW_AFTER_MS * RATE // 1000)
    quiet_needed = SILENCE_MS * RATE // 1000
    quiet = 0
    # Count the silence that runs into the window from before it.
    i = lo - 1
    while i >= 0 and quiet < quiet_needed and abs(samples[i]) <= THRESHOLD:
        quiet += 1
        i -= 1
    for i in range(lo, hi):
        if abs(samples[i]) > THRESHOLD:
            if quiet >= quiet_needed:
                return i
            quiet = 0
        else:
            quiet += 1
    return None


def extent_ms(samples, onset, length_ms):
    """How long the sound starting at `onset` lasts, up to `length_ms` + 50 ms (the next cue is
    at least 100 ms after its end): to its last sample above THRESHOLD. A cue interrupted by a
    gap (a starved stream) lasts longer than its length, a cut one shorter."""
    end = min(len(samples), onset + (length_ms + 50) * RATE // 1000)
    last = onset
    for i in range(onset, end):
        if abs(samples[i]) > THRESHOLD:
            last = i
    return (last - onset + 1) * 1000 / RATE


def purity(samples, onset, freq, ms=60, skip_ms=5):
    """Share of the power of `ms` of sound (from `skip_ms` after the onset) at `freq` (Goertzel):
    near 1 for a cue's pure tone, small for speech."""
    start = onset + skip_ms * RATE // 1000
    block = samples[start:start + ms * RATE // 1000]
    if not block:
        return 0.0
    n = len(block)
    coeff = 2 * math.cos(2 * math.pi * freq / RATE)
    s1 = s2 = 0.0
    for x in block:
        s1, s2 = x + coeff * s1 - s2, s1
    tone_power = (s1 * s1 + s2 * s2 - coeff * s1 * s2) * 2 / n  # the sine's power times n
    total = sum(x * x for x in block)
    return min(1.0, tone_power / total) if total else 0.0


# ---------------------------------------------------------------- the broker and the node

class Lines:
    """A process's output lines, read as they come (mosquitto_sub, the node's log)."""

    def __init__(self, args, env=None):
        self.proc = start(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        self.lines = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            with self.cond:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self.cond.notify_all()

    def wait_for(self, predicate, timeout):
        """The first line for which `predicate` is true, waiting up to `timeout` s; None if none."""
        end = time.monotonic() + timeout
        seen = 0
        with self.cond:
            while True:
                for line in self.lines[seen:]:
                    if predicate(line):
                        return line
                seen = len(self.lines)
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and seen == len(self.lines):
                    return None
                self.cond.wait(min(left, 0.5))


def request(port, topic, body, timeout=10):
    """Publishes a JSON command and waits for its reply on <base>/reply (matched by id)."""
    sub = Lines(["mosquitto_sub", "-p", str(port), "-t", f"{BASE}/reply", "-W", str(timeout)])
    time.sleep(0.2)
    subprocess.run(["mosquitto_pub", "-p", str(port), "-t", topic, "-q", "1", "-m", json.dumps(body)], check=True)

    def matches(line):
        try:
            return json.loads(line).get("id") == body["id"]
        except ValueError:
            return False
    line = sub.wait_for(matches, timeout)
    stop(sub.proc)
    if line is None:
        raise SystemExit(f"no reply to {body}")
    reply = json.loads(line)
    if not reply.get("ok"):
        raise SystemExit(f"the node refused {body}: {reply}")
    return reply


def node_config(work, port, cache):
    """The node's configuration file: ALSA's `pulse` device, speech cached in `cache`."""
    path = os.path.join(work, "pacer.yaml")
    with open(path, "w") as f:
        f.write(f"""node: cuebench
base_topic: {BASE}
data_dir: {os.path.join(work, "data")}
home_assistant: false
publish: {{per_second: []}}
timing: {{cues: [2, 1]}}
sound:
  device: pulse
  volume: 100%
  latency: {LATENCY_MS}ms
  speech:
    engine: espeak
    cache: {{directory: {cache}}}
    say: {{labels: on, next: off, rounds: off, last_round: off, halfway: off, done: on}}
""")
    return path


def program(segments, seconds):
    """The timer's spec: `segments` labelled work segments of `seconds` each."""
    return {"kind": "program", "segments": [
        {"kind": "work", "duration": f"{seconds}s", "label": LABELS[i % len(LABELS)]} for i in range(segments)]}


# ---------------------------------------------------------------- the floors

def tone_wav(path):
    """The floor's tone as a WAV file for paplay: 150 ms of 1000 Hz, 3 ms ramps, peak 0.7."""
    n, ramp = RATE * 150 // 1000, RATE * 3 // 1000
    out = array.array("h")
    for i in range(n):
        env = 1.0
        if i < ramp:
            env = 0.5 - 0.5 * math.cos(math.pi * i / ramp)
        if n - 1 - i < ramp:
            env = 0.5 - 0.5 * math.cos(math.pi * (n - 1 - i) / ramp)
        out.append(int(round(0.7 * 32767 * env * math.sin(2 * math.pi * FLOOR_PITCH * i / RATE))))
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(out.tobytes())


def sleep_until(wall):
    """Sleeps until the wall-clock instant `wall`, the last 2 ms spinning."""
    left = wall - time.time()
    if left > 0.002:
        time.sleep(left - 0.002)
    while time.time() < wall:
        pass


def paplay_floor(env, wav, first, spacing, count):
    """Starts `paplay` at each instant; returns the instants (epoch s)."""
    instants = [first + k * spacing for k in range(count)]
    players = []
    for t in instants:
        sleep_until(t)
        players.append(subprocess.Popen(["paplay", "--device=speaker", wav], env=env))
    for p in players:
        p.wait(timeout=30)
        if p.returncode != 0:
            raise SystemExit(f"paplay exited {p.returncode}")
    return instants


def alsa_floor(env, binary, first, spacing, count):
    """Runs cue-floor on ALSA's `pulse` device; returns the instants (epoch s) it placed tones at."""
    first_ms, spacing_ms = int(round(first * 1000)), int(round(spacing * 1000))
    out = subprocess.run([binary, "pulse", str(first_ms), str(spacing_ms), str(count)], env=env,
                         capture_output=True, text=True, timeout=count * spacing + 30)
    if out.returncode != 0:
        raise SystemExit(f"cue-floor failed ({out.returncode}): {out.stderr[-1000:]}")
    return [(first_ms + k * spacing_ms) / 1000 for k in range(count)]


# ---------------------------------------------------------------- analysis

def percentile(values, p):
    """Nearest rank: the smallest value with at least p % of the values at or below it."""
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def summary(values):
    if not values:
        return {"count": 0}
    return {"count": len(values), "p50": round(statistics.median(values), 2), "p99": round(percentile(values, 99), 2),
            "max": round(max(values), 2), "min": round(min(values), 2)}


def node_cues(messages):
    """The node's cues that sound, from its events and spoken cues: [(due s, kind, event type,
    pitch, text, length ms, at_ms - due_ms)], kind `speech` when its say message has a rendered
    clip, else `beep`."""
    said = {}
    for topic, doc in messages:
        if topic.endswith("/say"):
            said[(doc["event"], doc["due_ms"])] = doc
    cues = []
    for topic, doc in messages:
        if not topic.endswith("/event"):
            continue
        kind = doc.get("type")
        if kind in ("started", "phase", "skipped", "rewound"):
            cue = "rest" if doc.get("phase") in ("rest", "set_rest", "cooldown", "prepare") else "work"
        elif kind == "countdown":
            cue = "countdown"
        elif kind == "finished" and doc.get("reason") in ("completed", "finished", "skipped"):
            cue = "finish"
        elif kind in ("expired", "alert"):
            cue = "expired"
        elif kind == "halfway" and (kind, doc["due_ms"]) in said:
            cue = None  # spoken only: no beep of its own
        else:
            continue
        say = said.get((kind, doc["due_ms"]))
        spoken = say is not None and say.get("duration_ms") is not None
        cues.append((doc["due_ms"] / 1000, "speech" if spoken else "beep", kind, CUE_PITCH.get(cue),
                     say["text"] if say else None, say["duration_ms"] if spoken else CUE_MS.get(cue),
                     doc.get("at_ms", doc["due_ms"]) - doc["due_ms"]))
    return sorted(cues)


def measure_group(samples, a, b, due_list, pitch_of):
    """Finds the sound of each of `due_list` [(due s, what)] and measures it: a row per sound,
    with its lateness, its purity at `pitch_of(what)` and its length (`what["length_ms"]`)."""
    rows = []
    for due, what in due_list:
        nominal = sample_at(due + (LATENCY_MS / 1000 if what["node"] else 0), a, b)
        onset = find_onset(samples, nominal)
        row = dict(what, due_ms=round(due * 1000))
        if onset is None:
            row["nominal_sample"] = nominal
        else:
            row["onset_sample"] = onset
            row["lateness_ms"] = round((wall_at(onset, a, b) - due) * 1000, 3)
            freq = pitch_of(what)
            row["purity"] = round(purity(samples, onset, freq), 3) if freq else None
            if what.get("length_ms"):
                row["extent_ms"] = round(extent_ms(samples, onset, what["length_ms"]), 1)
                row["intact"] = abs(row["extent_ms"] - what["length_ms"]) <= INTACT_MS
        rows.append(row)
    return rows


def group_figures(rows, reference=None):
    """count, p50, p99, max, min of the rows' lateness; `missed` (no onset found), `not_intact`
    (found, but cut or interrupted); `relative`: the same minus `reference` (default: their
    own median)."""
    values = [row["lateness_ms"] for row in rows if "lateness_ms" in row]
    ref = reference if reference is not None else (statistics.median(values) if values else 0)
    emitted = [row["emitted_late_ms"] for row in rows if "emitted_late_ms" in row]
    return dict(summary(values), missed=len(rows) - len(values), emitted_late=summary(emitted),
                not_intact=sum(1 for row in rows if "lateness_ms" in row and not row.get("intact", True)),
                relative=summary([v - ref for v in values]))


def summarise(node_rows, floor_rows):
    """The figures: the node's beeps and speech (each checked for what it sounded like: a beep is
    a pure tone at its pitch, speech is not), relative to the median of both; each floor."""
    beeps, speech, speech_beeped, beep_not_tone = [], [], [], []
    for row in node_rows:
        tone = "purity" in row and row["purity"] is not None and row["purity"] > 0.8
        if row["kind"] == "beep":
            (beeps if tone or "lateness_ms" not in row else beep_not_tone).append(row)
        else:
            (speech_beeped if tone else speech).append(row)
    both = [row["lateness_ms"] for row in beeps + speech if "lateness_ms" in row]
    median = statistics.median(both) if both else 0
    return {"node": {"beep": group_figures(beeps, median), "speech": group_figures(speech, median),
                     "median_ms": round(median, 2), "speech_that_beeped": len(speech_beeped),
                     "beeps_not_a_tone": len(beep_not_tone)},
            "floor": {name: dict(group_figures(rows),
                                 tones_at_pitch=sum(1 for row in rows if (row.get("purity") or 0) > 0.8))
                      for name, rows in floor_rows.items()}}


def wait_quiet(limit, minutes):
    if limit <= 0:
        return
    end = time.monotonic() + minutes * 60
    while loadavg()[0] > limit and time.monotonic() < end:
        log(f"load {loadavg()[0]:.2f} > {limit}: waiting (until {minutes} min have passed)")
        time.sleep(30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=os.path.join(REPO, ".build", "release", "pacer"))
    ap.add_argument("--segments", type=int, default=26, help="work segments of the timer (default 26)")
    ap.add_argument("--segment-seconds", type=int, default=3, help="each segment's length, s (default 3)")
    ap.add_argument("--floor-tones", type=int, default=40, help="tones of each floor (default 40)")
    ap.add_argument("--floor-spacing", type=float, default=0.75, help="s between the floors' tones (default 0.75)")
    ap.add_argument("--record-latency-ms", type=int, default=2,
                    help="parec's latency, which bounds how far ahead the null sink mixes (default 2)")
    ap.add_argument("--json", help="write the figures and every cue's measurement to this file")
    ap.add_argument("--wait-load", type=float, default=0, help="wait until the 1-minute load is at most this (0: no wait)")
    ap.add_argument("--wait-minutes", type=float, default=20, help="wait at most this long for --wait-load, then run anyway")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (the recording as WAV)")
    args = ap.parse_args()

    for tool in ("pulseaudio", "parec", "paplay", "mosquitto", "mosquitto_sub", "mosquitto_pub", "espeak-ng", "cc"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            print(f"cue-lateness: {tool} is missing (PACER_SETUP=test scripts/setup installs the tools)")
            return 2
    if not os.path.exists(args.binary):
        print(f"cue-lateness: no pacer at {args.binary}: build it with `swift build -c release --product pacer`, or pass --binary")
        return 2

    wait_quiet(args.wait_load, args.wait_minutes)
    r = {"started_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
         "load_start": loadavg(), "binary": os.path.abspath(args.binary),
         "commit": subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
         "sources_commit": subprocess.run(["git", "-C", REPO, "log", "-1", "--format=%h", "--", "Sources", "Package.swift"],
                                          capture_output=True, text=True).stdout.strip(),
         "command": " ".join(sys.argv), "segments": args.segments, "segment_seconds": args.segment_seconds,
         "latency_ms": LATENCY_MS, "record_latency_ms": args.record_latency_ms}
    log(f"load {r['load_start']}, {r['binary']}")
    work = tempfile.mkdtemp(prefix="pacer-cue-lateness-")
    os.chmod(work, 0o755)
    ok = False
    try:
        floor_bin = os.path.join(work, "cue-floor")
        subprocess.run(["cc", "-O2", "-o", floor_bin, os.path.join(HERE, "cue-floor.c"), "-lasound", "-lm"], check=True)
        tone = os.path.join(work, "tone.wav")
        tone_wav(tone)

        server = start_pulseaudio(work)
        env = dict(os.environ, PULSE_SERVER=f"unix:{server}")
        env.pop("PIPEWIRE_PROPS", None)
        log("pulseaudio up")

        port = free_port()
        conf = os.path.join(work, "mosquitto.conf")
        with open(conf, "w") as f:
            f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n")
        broker = start([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", conf],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, broker)
        log(f"mosquitto on 127.0.0.1:{port}")

        cache = os.path.join(work, "speech")
        node = Lines([args.binary, "run", "--config", node_config(work, port, cache),
                      "--broker", f"mqtt://127.0.0.1:{port}"], env=env)
        status = Lines(["mosquitto_sub", "-p", str(port), "-t", f"{BASE}/status", "-W", "30"])
        if status.wait_for(lambda l: l.strip() == "online", 30) is None:
            raise SystemExit("the node never said online; its output:\n" + "\n".join(node.lines[-30:]))
        stop(status.proc)
        events = Lines(["mosquitto_sub", "-v", "-q", "1", "-p", str(port),
                        "-t", f"{BASE}/timers/+/event", "-t", f"{BASE}/timers/+/say"])
        recorder = Recorder(env, args.record_latency_ms)
        time.sleep(0.5)

        request(port, f"{BASE}/cmd", {"action": "create", "id": "create", "timer": TIMER, "name": "Cue lateness",
                                      "spec": program(args.segments, args.segment_seconds)})
        phrases = len({LABELS[i % len(LABELS)] for i in range(args.segments)}) + 1  # the labels and "Done"
        deadline = time.monotonic() + 60
        while True:
            clips = [f for f in os.listdir(cache) if f.endswith(".wav")] if os.path.isdir(cache) else []
            if len(clips) >= phrases:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"the speech cache holds {len(clips)} clips of {phrases} after 60 s")
            time.sleep(0.2)
        time.sleep(1.0)  # the last clip's file is written before it is held in memory
        log(f"speech cache holds {len(clips)} clips")

        # The floors, in the same recording, while the node idles.
        alsa = alsa_floor(env, floor_bin, time.time() + 1.0, args.floor_spacing, args.floor_tones)
        log(f"alsa floor: {len(alsa)} tones")
        paplay = paplay_floor(env, tone, time.time() + 1.0, args.floor_spacing, args.floor_tones)
        log(f"paplay floor: {len(paplay)} tones")
        time.sleep(1.0)

        request(port, f"{BASE}/timers/{TIMER}/cmd", {"action": "start", "id": "start"})
        log(f"timer started: {args.segments} x {args.segment_seconds} s")
        time.sleep(min(5, args.segments * args.segment_seconds / 2))
        sinks = subprocess.run(["pactl", "list", "sinks"], env=env, capture_output=True, text=True).stdout
        r["sink_latency"] = next((l.strip() for l in sinks.splitlines() if l.strip().startswith("Latency:")), None)
        done = events.wait_for(lambda l: l.startswith(f"{BASE}/timers/{TIMER}/event ") and '"type":"finished"' in l,
                               args.segments * args.segment_seconds + 30)
        if done is None:
            raise SystemExit("the timer never finished; the node's output:\n" + "\n".join(node.lines[-30:]))
        time.sleep(2.0)  # "Done" and the recorder's last fragments
        samples = recorder.stop()
        stop(events.proc)
        stop(node.proc)
        r["load_end"] = loadavg()
        r["node_sound_log"] = [l for l in node.lines if "sound:" in l][-20:]
        r["ended_utc"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        if args.keep:
            with wave.open(os.path.join(work, "recording.wav"), "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(RATE)
                w.writeframes(samples.tobytes())

        a, b, spread, bins = align(recorder.arrivals)
        r["alignment"] = {"sample0_wall": a, "drift": b, "drift_ppm": round(b * RATE * 1e6, 2), "spread_ms": round(spread, 2), "bins": bins,
                          "recorded_s": round(len(samples) / RATE, 1)}
        messages = []
        for line in events.lines:
            topic, _, payload = line.partition(" ")
            try:
                messages.append((topic, json.loads(payload)))
            except ValueError:
                pass
        cues = node_cues(messages)
        node_rows = measure_group(samples, a, b, [(due, {"node": True, "kind": kind, "event": ev, "pitch": pitch, "text": text,
                                                          "length_ms": length, "emitted_late_ms": emitted})
                                                   for due, kind, ev, pitch, text, length, emitted in cues],
                                  lambda w: w["pitch"] or CUE_PITCH["work"])
        floor_rows = {
            name: measure_group(samples, a, b, [(t, {"node": False, "kind": name, "length_ms": FLOOR_MS}) for t in instants],
                                lambda w: FLOOR_PITCH)
            for name, instants in (("alsa", alsa), ("paplay", paplay))}

        r.update(summarise(node_rows, floor_rows))
        r["rows"] = {"node": node_rows, **floor_rows}
        ok = True
    finally:
        for proc in reversed(PROCS):
            stop(proc)
        if args.keep or not ok:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    report(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
        log(f"wrote {args.json}")
    return 0


def report(r):
    al = r["alignment"]
    print(f"\ncue lateness: a sound's onset in the null sink's monitor minus its due instant "
          f"(the node's `latency: {r['latency_ms']}ms` included)")
    print(f"  {r['started_utc']} to {r['ended_utc']} UTC, commit {r['commit']} (Sources/ last changed in "
          f"{r['sources_commit']}; the binary is whatever was built), {r['binary']}")
    print(f"  load {' '.join(map(str, r['load_start']))} at the start, {' '.join(map(str, r['load_end']))} at the end")
    print(f"  the recording ({al['recorded_s']} s) placed on the wall clock by parec's arrivals: the earliest of "
          f"{al['bins']} bins within {al['spread_ms']} ms of the fit, drift {al['drift_ppm']} ppm; "
          f"the sink while the node played: {r.get('sink_latency')}")
    print(f"\n  {'':16} {'count':>5} {'missed':>6} {'broken':>6} | {'absolute, ms':^26} | {'relative, ms':^26}")
    print(f"  {'':16} {'':5} {'':6} {'':6} | {'p50':>8} {'p99':>8} {'max':>8} | {'p50':>8} {'p99':>8} {'max':>8}")

    def line(name, s):
        head = f"  {name:16} {s.get('count', 0):5} {s.get('missed', 0):6} {s.get('not_intact', 0):6} |"
        if not s.get("count"):
            print(head)
            return
        rel = s["relative"]
        print(f"{head} {s['p50']:8.1f} {s['p99']:8.1f} {s['max']:8.1f} | {rel['p50']:8.1f} {rel['p99']:8.1f} {rel['max']:8.1f}")
    line("node beeps", r["node"]["beep"])
    line("node speech", r["node"]["speech"])
    line("floor alsa (C)", r["floor"]["alsa"])
    line("floor paplay", r["floor"]["paplay"])
    print(f"\n  node relative: minus the median of all its cues, beeps and speech ({r['node']['median_ms']} ms); "
          f"floors: minus their own median.")
    print(f"  missed: no onset found; broken: found but cut or interrupted (longer or shorter than its sound by "
          f"more than {INTACT_MS} ms); spoken cues that beeped instead: {r['node']['speech_that_beeped']}; "
          f"beeps that were not a tone: {r['node']['beeps_not_a_tone']}. p99: nearest rank (below 100 cues, the maximum).")
    for kind in ("beep", "speech"):
        e = r["node"][kind]["emitted_late"]
        if e.get("count"):
            print(f"  node {kind}: the event's at_ms - due_ms (when the engine handed it over) p50 {e['p50']:.1f}, "
                  f"p99 {e['p99']:.1f}, max {e['max']:.1f} ms")
    for l in r.get("node_sound_log", []):
        print(f"  node: {l}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit as e:
        if isinstance(e.code, str):
            print(f"cue-lateness: {e.code}", file=sys.stderr)
            sys.exit(1)
        raise
