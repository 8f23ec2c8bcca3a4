"""The hostile payloads of `scripts/reliability --only hostile` (docs/RELIABILITY.md, "Hostile
input"): what a careless or hostile client could send on every topic a Pacer node reads.

`cases(now_ms)` returns a list of `Case`s, a namedtuple whose first four fields are
(name, topic_kind, payload_bytes, expectation), then:

- `field`: the field the case is about (its error message must name it), or None;
- `timer`: the timer id in the topic (`timer_cmd`: `<base>/timers/<timer>/cmd`; `state`:
  `<base>/timers/<timer>/state`; `next`: `<base>/timers/<timer>/next`), else None;
- `rid`: the request id the reply must echo (`"h<N>"`, added to every JSON command that is
  still an object), or None when the node cannot know it (not JSON, not an object, an id of
  the wrong type);
- `retain`: publish it retained.

topic_kind: `cmd` (`<base>/cmd`), `timer_cmd`, `time` (`<base>/time`), `hr` (plain source
`hr/a`), `hr_json` (JSON source `hr/b`, field `data.bpm`), `ha_status`
(`homeassistant/status`), `state` (a retained `<base>/timers/<id>/state`, read back by the
node's outbox check on a connect), `next` (a retained `<base>/timers/<id>/next`, read at every
connect: one on a timer no schedule starts is cleared).

expectation:
- `ok`: one reply, `ok: true` (on `time`: with `now_ms`);
- `error`: one reply, `ok: false` with `error.code` and `error.message` (naming `field` when
  set); `error:<code>` also fixes the code;
- `any`: one reply, either way (a value whose meaning is debatable);
- `none`: no reply (hr, ha_status, state, next): the node stays up and nothing changes;
- `hr:<bpm>`: no reply, and the bound timer's state shows that bpm (a valid reading);
- `ha_online`: no reply, and the node publishes its discovery configs again.

Timers the cases use (the node's YAML in Tests/harness/reliability/hostile.py): `hx` (idle:
the target of hostile commands, which must all be refused), `okt` (for the valid cases that
start a timer), `okc<N>` / `hs<N>` (fresh ids: created only by valid cases, or by a hostile one
wrongly accepted). Python 3 standard library only.
"""
import collections
import datetime
import json
import re

Case = collections.namedtuple("Case", "name kind payload expect field timer rid retain")

LIMIT = 65_536          # limits.max_payload_bytes, the default
HX, OKT = "hx", "okt"   # the hostile target (idle) and the timer of the valid starts
LATEST_MS = 4_102_444_800_000
# 2100-01-01T00:00:00Z, the latest instant a command may name
FORGED_MARK = "forged [PacerNode] a forged line"  # what scenario_hostile looks for in the node's log
ID = "@IDXX@"  # replaced by the request id "h<NNNNN>" (the same length: exact sizes stay exact)

TIMER_ACTIONS = ["start", "pause", "resume", "toggle", "cancel", "reset", "finish", "skip", "back", "adjust", "ack", "snooze"]
NODE_ACTIONS = ["create", "delete", "list", "time", "history"]
ACTIONS = TIMER_ACTIONS + NODE_ACTIONS
# Actions that, accepted on the idle `hx`, are refused anyway (invalid_state) or are read-only:
# a valid-but-odd value of a common field can be tried with them without changing anything.
REFUSED_ON_IDLE = ["pause", "resume", "cancel", "finish", "skip", "back", "adjust", "ack", "snooze"]
READ_ONLY = ["list", "time", "history"]


class Raw(bytes):
    """A JSON token (or any bytes) written as is."""


def enc(value):
    if isinstance(value, Raw):
        return bytes(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def obj(*pairs):
    return b"{" + b",".join(enc(k) + b":" + enc(v) for k, v in pairs) + b"}"


def strict_json(payload):
    """Whether the payload is JSON by RFC 8259's grammar, UTF-8, no duplicate key, no lone
    surrogate: then a field's problem is the node's to name (not a syntax error)."""
    def no_dupes(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate key")
        return dict(pairs)

    def refuse(_):
        raise ValueError("constant")
    try:
        text = payload.decode("utf-8")
        value = json.loads(text, object_pairs_hook=no_dupes, parse_constant=refuse)
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # lone surrogates fail here
        return True
    except (ValueError, UnicodeError, RecursionError):
        return False


def number_of(raw):
    """The number a JSON token stands for (None: not a number)."""
    try:
        v = json.loads(raw, parse_constant=lambda _: (_ for _ in ()).throw(ValueError()))
    except (ValueError, RecursionError):
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def int_ok(raw, lo, hi):
    """Whether the node takes this JSON token as a whole number in lo...hi (null: absent)."""
    if raw == b"null":
        return True
    v = number_of(raw)
    return v is not None and v == v and abs(v) != float("inf") and v == int(v) and abs(v) < 9e15 and lo <= v <= hi


# --- values --------------------------------------------------------------------------------

# JSON tokens for number fields: (label, raw token).
NUMBERS = [
    ("1e309", b"1e309"), ("-1e309", b"-1e309"), ("1e-400", b"1e-400"), ("-0", b"-0"), ("-0.0", b"-0.0"),
    ("NaN", b"NaN"), ("Infinity", b"Infinity"), ("-Infinity", b"-Infinity"), ("\"NaN\"", b'"NaN"'),
    ("\"Infinity\"", b'"Infinity"'), ("26 digits", b"12345678901234567890123456"),
    ("2^63", b"9223372036854775808"), ("Int64.max", b"9223372036854775807"), ("-2^63-1", b"-9223372036854775809"),
    ("2^53+1", b"9007199254740993"), ("0x10", b"0x10"), ("1_000", b"1_000"), ("full-width 10", "１０".encode()),
    ("\"full-width 10\"", '"１０"'.encode()), ("Arabic-Indic 10", "١٠".encode()), ("1.5", b"1.5"), ("\"5\"", b'"5"'),
    ("true", b"true"), ("false", b"false"), ("[]", b"[]"), ("[5]", b"[5]"), ("{}", b"{}"), ("{\"v\":5}", b'{"v":5}'),
    ("-1", b"-1"), ("1e2147483648", b"1e2147483648"), ("00012", b"00012"), ("+5", b"+5"), (".5", b".5"), ("5.", b"5."),
    ("-", b"-"), ("1e2", b"1e2"), ("null", b"null"), ("2^31", b"2147483648"), ("4102444800001", b"4102444800001"),
    ("\"\"", b'""'), ("1E+2", b"1E+2"), ("0.1e1", b"0.1e1"),
]
BIG_NUMBERS = [("1 and 60,000 zeros", b"1" + b"0" * 60_000), ("0.(60,000 zeros)1", b"0." + b"0" * 60_000 + b"1")]

# Text values for identifier-like string fields (ids, names, words): (label, JSON token).
def _texts():
    return [
        ("5", b"5"), ("1.5", b"1.5"), ("true", b"true"), ("[]", b"[]"), ("[\"x\"]", b'["x"]'), ("{}", b"{}"),
        ("{\"id\":\"keep\"}", b'{"id":"keep"}'), ("\"\\u0000\"", b'"\\u0000"'), ("\"a\\u0000b\"", b'"a\\u0000b"'),
        ("newline", b'"a\\nb"'), ("carriage return", b'"a\\rb"'), ("ANSI escape", b'"\\u001b[31mred"'),
        ("DEL", b'"a\\u007fb"'), ("U+0085 NEL", b'"a\\u0085b"'), ("raw newline", b'"a\nb"'), ("raw tab", b'"a\tb"'),
        ("raw NUL", b'"a\x00b"'), ("overlong /", b'"\xc0\xafx"'), ("encoded surrogate", b'"\xed\xa0\x80x"'),
        ("truncated sequence", b'"x\xe2\x82"'), ("0xFF", b'"\xffx"'), ("above U+10FFFF", b'"\xf4\x90\x80\x80"'),
        ("lone continuation", b'"\x80x"'), ("lone high surrogate escape", b'"\\ud800"'), ("lone low surrogate escape", b'"\\udc00"'),
        ("reversed surrogate pair", b'"\\udc00\\ud800"'), ("invalid escape", b'"\\x41"'), ("truncated escape", b'"\\u00"'),
    ]


TEXTS = _texts()

# Timer ids that are not `[a-z0-9][a-z0-9_-]{0,63}`: (label, JSON token).
BAD_IDS = [
    ("empty", b'""'), ("uppercase", b'"KEEP"'), ("mixed case", b'"Hx"'), ("slash", b'"a/b"'), ("plus", b'"a+b"'),
    ("hash", b'"a#"'), ("/ + #", b'"a/+/#"'), ("..", b'".."'), ("../x", b'"../x"'), ("65 chars", enc("a" * 65)),
    ("201 chars", enc("a" * 201)), ("60 KB", enc("a" * 60_000)), ("leading -", b'"-a"'), ("leading _", b'"_a"'),
    ("unicode", enc("kéep")), ("full-width", enc("ｋｅｅｐ")), ("space", b'"a b"'), ("trailing space", b'"hx "'),
    ("leading space", b'" hx"'), ("RTL override", enc("\u202ehx")), ("zero-width space", enc("h\u200bx")),
    ("dot", b'"a.b"'), ("wildcard +", b'"+"'), ("wildcard #", b'"#"'), ("$SYS", b'"$SYS"'),
] + [(label, raw) for label, raw in TEXTS]

# ISO 8601 texts that are not an instant the node takes (the fixed grammar of
# Sources/PacerCore/ISO8601.swift: RFC 3339, years 0001-9999, an offset required).
D = "2026-10-22T18:02:12"
ISO_BAD = [
    ("fraction of 130 eights", D + "." + "8" * 130 + "3"),  # crashed the node in ICU (Floating point exception)
    ("fraction of 130 eights + Z", D + "." + "8" * 130 + "3Z"),
    ("fraction of 10 digits", D + ".1234567890Z"), ("fraction of 20 digits", D + "." + "1" * 20 + "Z"),
    ("fraction of 1000 digits", D + "." + "9" * 1000 + "Z"), ("fraction of 60000 digits", D + "." + "5" * 60_000 + "Z"),
    ("empty fraction", D + ".Z"), ("comma fraction", D + ",5Z"),
    ("year 0000", "0000-10-22T18:02:12Z"), ("year 10000", "10000-10-22T18:02:12Z"), ("year -0001", "-0001-10-22T18:02:12Z"),
    ("year +275760", "+275760-09-13T00:00:00Z"), ("year +002026", "+002026-10-22T18:02:12Z"), ("2-digit year", "26-10-22T18:02:12Z"),
    ("offset +99:99", D + "+99:99"), ("offset -24:00", D + "-24:00"), ("offset +23:60", D + "+23:60"), ("offset +24:00", D + "+24:00"),
    ("offset +01", D + "+01"), ("offset +0100", D + "+0100"), ("offset +1:00", D + "+1:00"), ("offset Z+01:00", D + "Z+01:00"),
    ("offset UTC", D + " UTC"), ("offset GMT+1", D + "GMT+1"), ("offset +01:00:00", D + "+01:00:00"),
    ("month 13", "2026-13-22T18:02:12Z"), ("month 00", "2026-00-22T18:02:12Z"), ("day 32", "2026-10-32T18:02:12Z"),
    ("day 00", "2026-10-00T18:02:12Z"), ("Feb 30", "2028-02-30T00:00:00Z"), ("Feb 29 in 2027", "2027-02-29T00:00:00Z"),
    ("Feb 29 in 1900", "1900-02-29T00:00:00Z"), ("Feb 29 in 2100", "2100-02-29T00:00:00Z"), ("Apr 31", "2026-04-31T00:00:00Z"),
    ("hour 24", "2026-10-22T24:00:00Z"), ("minute 60", "2026-10-22T18:60:12Z"), ("second 60", "2026-10-22T18:02:60Z"),
    ("second 61", "2026-10-22T18:02:61Z"), ("no offset", D), ("no offset, fraction", D + ".5"), ("no seconds", "2026-10-22T18:02Z"),
    ("date only", "2026-10-22"), ("time only", "18:02:12Z"), ("basic format", "20261022T180212Z"),
    ("week date", "2026-W43-4T18:02:12Z"), ("ordinal date", "2026-295T18:02:12Z"), ("slashes", "2026/10/22T18:02:12Z"),
    ("full-width digits", "２０２６-１０-２２T１８:０２:１２Z"), ("Arabic-Indic digits", "٢٠٢٦-١٠-٢٢T١٨:٠٢:١٢Z"),
    ("Devanagari digits", "२०२६-१०-२२T१८:०२:१२Z"), ("unicode minus offset", D + "\u221201:00"),
    ("leading space", " " + D + "Z"), ("trailing space", D + "Z "), ("two spaces", "2026-10-22  18:02:12Z"),
    ("trailing garbage", D + "Zjunk"), ("trailing newline", D + "Z\n"), ("NUL inside", "2026-10-22T18:02:12\u0000Z"),
    ("NUL after", D + "Z\u0000"), ("T only", "T"), ("empty", ""), ("space only", " "), ("now", "now"), ("yesterday", "yesterday"),
    ("epoch ms as text", "1795321339792"), ("-1d", "-1d"), ("1h", "1h"), ("infinity", "∞"), ("NaN text", "NaN"),
    ("1 MB-ish date", "2026-10-22T18:02:12Z" + " " * 40_000), ("RTL mark", "\u200f" + D + "Z"),
    ("before 1970", "1969-12-31T23:59:59Z"), ("after 2100", "2100-01-01T00:00:00.001Z"), ("year 9999", "9999-12-31T23:59:59Z"),
    ("year 0001", "0001-01-01T00:00:00Z"),
]
# Valid instants, in the past or in the node's range (a `since` takes them; a `start_at` in the
# past starts now, as `at`).
ISO_PAST_OK = [
    ("1970 epoch", "1970-01-01T00:00:00Z"), ("Feb 29 in 2000", "2000-02-29T12:00:00Z"), ("Feb 29 in 2024", "2024-02-29T23:59:59Z"),
    ("2026 with 9-digit fraction", D + ".123456789Z"),
]
ISO_FAR_OK = [("2099", "2099-06-01T00:00:00Z"), ("2100 exactly", "2100-01-01T00:00:00Z"), ("Feb 29 in 2028", "2028-02-29T00:00:00Z")]


def iso_soon(now_ms, offset_minutes=0, sep="T", zone=None, fraction="", lower=False):
    """An instant two hours from now, written with the given offset (the same instant)."""
    t = datetime.datetime.fromtimestamp(now_ms / 1000 + 7200, datetime.timezone.utc).replace(microsecond=0)
    local = t + datetime.timedelta(minutes=offset_minutes)
    if zone is None:
        sign = "-" if offset_minutes < 0 else "+"
        zone = "Z" if offset_minutes == 0 else f"{sign}{abs(offset_minutes) // 60:02d}:{abs(offset_minutes) % 60:02d}"
    text = local.strftime("%Y-%m-%d") + sep + local.strftime("%H:%M:%S") + fraction + zone
    return text.replace("T", "t").replace("Z", "z") if lower else text


def iso_soon_variants(now_ms):
    return [
        ("in 2 h", iso_soon(now_ms)), ("in 2 h, 9-digit fraction", iso_soon(now_ms, fraction=".123456789")),
        ("in 2 h, 1-digit fraction", iso_soon(now_ms, fraction=".5")), ("in 2 h, 3-digit fraction", iso_soon(now_ms, fraction=".999")),
        ("in 2 h, lowercase t and z", iso_soon(now_ms, lower=True)), ("in 2 h, space separator", iso_soon(now_ms, sep=" ")),
        ("in 2 h, +14:00", iso_soon(now_ms, 14 * 60)), ("in 2 h, -12:00", iso_soon(now_ms, -12 * 60)),
        ("in 2 h, +23:59", iso_soon(now_ms, 23 * 60 + 59)), ("in 2 h, -23:59", iso_soon(now_ms, -(23 * 60 + 59))),
        ("in 2 h, +05:45", iso_soon(now_ms, 5 * 60 + 45)), ("in 2 h, -00:00", iso_soon(now_ms, zone="-00:00")),
        ("in 2 h, +00:00", iso_soon(now_ms, zone="+00:00")),
    ]


# Durations inside a spec: (label, JSON token, valid).
DURATIONS = [
    ("10^13 hours", b'"10000000000000h"', False), ("1e400s", b'"1e400s"', False), ("1e309 (number)", b"1e309", False),
    ("-5 (number)", b"-5", False), ("-5s", b'"-5s"', False), ("-1m30s", b'"-1m30s"', False), ("\"NaN\"", b'"NaN"', False),
    ("\"inf\"", b'"inf"', False), ("full-width 40s", '"４０s"'.encode(), False), ("Arabic-Indic 40s", '"٤٠s"'.encode(), False),
    ("1m30 (ambiguous)", b'"1m30"', False), ("empty", b'""', False), ("space", b'" "', False), ("0s", b'"0s"', False),
    ("0 (number)", b"0", False), ("PT (empty ISO)", b'"PT"', False), ("P1D (no T)", b'"P1D"', False), ("1:60", b'"1:60"', False),
    ("99:99:99", b'"99:99:99"', False), ("Int64.max ms", b'"9223372036854775807ms"', False), ("1000-digit s", enc("1" + "0" * 1000 + "s"), False),
    ("1.5.5s", b'"1.5.5s"', False), ("500us", b'"500us"', False), ("1 fortnight", b'"1 fortnight"', False), ("NUL", b'"\\u0000"', False),
    ("8 days", b'"8d"', False), ("7 days 1 s", b'"7d1s"', False), ("true", b"true", False), ("[]", b"[]", False), ("{}", b"{}", False),
    ("NaN (bare)", b"NaN", False), ("2^63 s", b"9223372036854775808", False), ("1e-400 (number)", b"1e-400", False),
    ("10^12 s", b"1000000000000", False), ("60 KB of 9", enc("9" * 60_000), False), ("0x10", b'"0x10"', False),
    ("1e3s", b'"1e3s"', None), ("1_000s", b'"1_000s"', False), ("1h 30m (valid)", b'"1h 30m"', True), ("PT1M30S (valid)", b'"PT1M30S"', True),
    ("7d (valid)", b'"7d"', True), ("1 (valid)", b"1", True),
]


def _lines(now_ms):
    """Yields (name, kind, payload, expect, field, timer, retain, want_id): want_id True puts
    `"id":"h<N>"` first in a JSON object payload (built by `obj`)."""
    out = []

    def add(name, kind, payload, expect, field=None, timer=None, retain=False, rid="auto"):
        out.append((name, kind, payload, expect, field, timer, retain, rid))

    def cmd_obj(action, pairs, on_topic=False):
        """A JSON command object on `<base>/cmd` (timer in the payload) or the timer's topic."""
        return obj(*([("action", action)] + list(pairs)))

    # ------------------------------------------------------------------------------------
    # Whole payloads, sizes first (the RSS baseline is taken after the first batch).
    pad_obj = lambda n: (lambda head: head + b" " * (n - len(head) - 1) + b"}")(b'{"action":"time","id":"@IDXX@"')
    add("1 MiB JSON command", "cmd", b'{"action":"time","pad":"' + b"x" * (1 << 20) + b'"}', "error:payload_too_large", rid=None)
    add("16 MiB of x (timer cmd)", "timer_cmd", b"x" * (16 << 20), "error:payload_too_large", timer=HX, rid=None)
    add("16 MiB JSON command", "cmd", b'{"action":"list","pad":"' + b"y" * (16 << 20) + b'"}', "error:payload_too_large", rid=None)
    add("1 MiB on time", "time", b'{"id":"' + b"t" * (1 << 20) + b'"}', "error:payload_too_large", rid=None)
    add("65,537 bytes (limit + 1)", "cmd", pad_obj(LIMIT + 1), "error:payload_too_large", rid=None)
    add("65,536 bytes (the limit)", "cmd", pad_obj(LIMIT), "ok", rid="@")
    add("65,537 bytes of a word (timer cmd)", "timer_cmd", b"pause" + b" " * (LIMIT + 1 - 5), "error:payload_too_large", timer=HX, rid=None)
    add("65,536 bytes of a word (timer cmd)", "timer_cmd", b"pause" + b" " * (LIMIT - 5), "error:invalid_state", timer=HX, rid=None)
    add("65,537 bytes on time", "time", b"{}" + b" " * (LIMIT - 1), "error:payload_too_large", rid=None)
    add("65,536 bytes on time", "time", b"{}" + b" " * (LIMIT - 2), "ok", rid=None)
    add("100,000-deep array (over the limit)", "cmd", b'{"action":"time","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "error:payload_too_large", rid=None)
    add("100,000-deep object (over the limit)", "cmd", b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "error:payload_too_large", rid=None)
    add("100,000 open brackets (timer cmd)", "timer_cmd", b"[" * 100_000, "error:payload_too_large", timer=HX, rid=None)
    add("32,000-deep array", "cmd", b'{"action":"time","id":"@IDXX@","x":' + b"[" * 32_000 + b"]" * 32_000 + b"}", "error:bad_json", rid=None)
    add("10,000-deep object", "cmd", b'{"action":"time","id":"@IDXX@","x":' + b'{"a":' * 10_000 + b"1" + b"}" * 10_000 + b"}", "error:bad_json", rid=None)
    add("60,000 open brackets", "cmd", b"[" * 60_000, "error:bad_json", rid=None)
    add("13,000 open objects", "cmd", b'{"a":' * 13_000, "error:bad_json", rid=None)
    add("10,000-deep array (timer cmd)", "timer_cmd", b'{"action":"pause","x":' + b"[" * 10_000 + b"]" * 10_000 + b"}", "error:bad_json", timer=HX, rid=None)
    add("513-deep array in a spec", "cmd", obj(("action", "create"), ("id", ID), ("timer", "hsdeep"), ("spec", Raw(b"[" * 513 + b"]" * 513))), "error:bad_json", rid=None)
    add("512-deep array in a spec", "cmd", obj(("action", "create"), ("id", ID), ("timer", "hsdeep"), ("spec", Raw(b"[" * 511 + b"]" * 511))), "error", field="spec")
    add("6,000 unknown keys", "cmd", b'{"action":"time","id":"@IDXX@",' + b",".join(b'"%x":0' % i for i in range(6_000)) + b"}", "error:invalid_argument")
    add("10,000 unknown keys (over the limit)", "cmd", b'{"action":"time",' + b",".join(b'"k%d":0' % i for i in range(10_000)) + b"}", "error:payload_too_large", rid=None)
    add("a 60 KB key", "cmd", obj(("action", "time"), ("id", ID), ("k" * 60_000, 1)), "error:invalid_argument")
    add("a 60 KB action", "cmd", obj(("action", "p" * 60_000), ("id", ID)), "error:unknown_action", field="action")
    add("10,000 ids in an array", "cmd", obj(("action", "time"), ("id", Raw(b"[" + b",".join([b'"x"'] * 10_000) + b"]"))), "error", field="id", rid=None)

    # Empty, white space, not an object, BOMs, encodings.
    for kind, timer in (("cmd", None), ("timer_cmd", HX)):
        where = "" if kind == "cmd" else " (timer cmd)"
        add("empty payload" + where, kind, b"", "error:bad_json", timer=timer, rid=None)
        add("spaces only" + where, kind, b"    ", "error:bad_json", timer=timer, rid=None)
        add("newlines and tabs only" + where, kind, b"\n\t\r\n", "error:bad_json", timer=timer, rid=None)
        add("no-break spaces only" + where, kind, "\u00a0\u3000".encode(), "error:bad_json", timer=timer, rid=None)
        add("BOM only" + where, kind, b"\xef\xbb\xbf", "error", timer=timer, rid=None)
        add("NUL only" + where, kind, b"\x00", "error", timer=timer, rid=None)
        add("JSON null" + where, kind, b"null", "error", timer=timer, rid=None)
        add("JSON array" + where, kind, b'[{"action":"pause"}]', "error:bad_json", timer=timer, rid=None)
        add("JSON string" + where, kind, b'"pause"', "error:bad_json", timer=timer, rid=None)
        add("UTF-16 with BOM" + where, kind, b"\xff\xfe" + '{"action":"pause"}'.encode("utf-16-le"), "error", timer=timer, rid=None)
        add("UTF-32" + where, kind, '{"action":"pause"}'.encode("utf-32-le"), "error", timer=timer, rid=None)
        add("gzip magic" + where, kind, b"\x1f\x8b\x08\x00" + bytes(range(256)), "error", timer=timer, rid=None)
    add("JSON number", "cmd", b"5", "error:bad_json", rid=None)
    add("JSON true", "cmd", b"true", "error:bad_json", rid=None)
    add("huge bare number", "cmd", b"9" * 5000, "error:bad_json", rid=None)
    add("word on the node topic", "cmd", b"pause", "error:bad_json", rid=None)
    add("BOM + valid command", "cmd", b"\xef\xbb\xbf" + obj(("action", "time"), ("id", ID)), "any")
    add("valid command in JSON white space", "cmd", b"\r\n\t " + obj(("action", "time"), ("id", ID)) + b" \n", "ok")
    add("valid command in no-break spaces", "cmd", "\u00a0".encode() + obj(("action", "time"), ("id", ID)) + "\u2028".encode(), "any")
    add("two objects", "cmd", obj(("action", "time"), ("id", ID)) + b'{"action":"list"}', "error:bad_json", rid=None)
    add("trailing garbage", "cmd", obj(("action", "time"), ("id", ID)) + b" x", "error:bad_json", rid=None)
    add("NUL after the object", "cmd", obj(("action", "time"), ("id", ID)) + b"\x00", "error:bad_json", rid=None)
    add("trailing comma in object", "cmd", b'{"action":"time","id":"@IDXX@",}', "error:bad_json", rid=None)
    add("trailing comma in array", "cmd", b'{"action":"create","id":"@IDXX@","timer":"hs0","spec":{"kind":"interval","work":"1s","exercises":["a",]}}', "error:bad_json", rid=None)
    add("single quotes", "cmd", b"{'action':'time','id':'@IDXX@'}", "error:bad_json", rid=None)
    add("unquoted keys", "cmd", b'{action:"time",id:"@IDXX@"}', "error:bad_json", rid=None)
    add("comment", "cmd", b'{"action":"time" /* x */,"id":"@IDXX@"}', "error:bad_json", rid=None)
    add("line comment", "cmd", b'// x\n{"action":"time","id":"@IDXX@"}', "error:bad_json", rid=None)
    add("unterminated string", "cmd", b'{"action":"time","id":"@IDXX@', "error:bad_json", rid=None)
    add("unterminated object", "cmd", b'{"action":"time","id":"@IDXX@"', "error:bad_json", rid=None)
    add("missing value", "cmd", b'{"action":"time","id":"@IDXX@","at":}', "error:bad_json", rid=None)
    add("missing colon", "cmd", b'{"action" "time","id":"@IDXX@"}', "error:bad_json", rid=None)
    add("30,000 backslashes", "cmd", b'{"action":"time","id":"' + b"\\" * 30_000 + b'"}', "error", rid=None)
    add("30,000 escaped quotes", "cmd", b'{"action":"time","id":"' + b'\\"' * 30_000 + b'"}', "error", field="id", rid=None)
    # Duplicate keys (RFC 8259 leaves them undefined: refused, docs/SECURITY.md).
    add("duplicate action", "cmd", b'{"action":"time","action":"delete","timer":"hx","id":"@IDXX@"}', "error:bad_json", rid=None)
    add("duplicate id", "cmd", b'{"action":"time","id":"@IDXX@","id":"other"}', "error:bad_json", rid=None)
    add("duplicate timer", "cmd", b'{"action":"pause","timer":"hx","timer":"keep","id":"@IDXX@"}', "error:bad_json", rid=None)
    add("duplicate key in a spec", "cmd", b'{"action":"create","timer":"hs1","id":"@IDXX@","spec":{"kind":"countdown","kind":"stopwatch","duration":"1m"}}', "error:bad_json", rid=None)
    add("duplicate key, canonically equal", "cmd", '{"action":"time","id":"@IDXX@","é":1,"e\u0301":2}'.encode(), "error:bad_json", rid=None)
    add("duplicate key, timer topic", "timer_cmd", b'{"action":"pause","action":"start","id":"@IDXX@"}', "error:bad_json", timer=HX, rid=None)
    # Invalid UTF-8 and bad escapes anywhere.
    for label, raw in [("overlong /", b"\xc0\xaf"), ("overlong NUL", b"\xc0\x80"), ("encoded surrogate", b"\xed\xa0\x80"),
                       ("truncated 3-byte", b"\xe2\x82"), ("0xFF", b"\xff"), ("0xFE", b"\xfe"), ("5-byte", b"\xf8\x88\x80\x80\x80"),
                       ("above U+10FFFF", b"\xf4\x90\x80\x80"), ("lone continuation", b"\x80"), ("Latin-1 e acute", b"\xe9")]:
        add(f"invalid UTF-8 ({label}) in a value", "cmd", b'{"action":"time","id":"@IDXX@","x":"a' + raw + b'"}', "error:bad_json", rid=None)
    add("invalid UTF-8 in a key", "cmd", b'{"action":"time","id":"@IDXX@","\xff":1}', "error:bad_json", rid=None)
    add("invalid UTF-8 at the end", "cmd", b'{"action":"time","id":"@IDXX@"}\xe2', "error:bad_json", rid=None)
    add("invalid UTF-8 outside strings", "cmd", b'{"action":"time",\xff"id":"@IDXX@"}', "error:bad_json", rid=None)
    add("NUL escape in a key", "cmd", b'{"action":"time","id":"@IDXX@","a\\u0000b":1}', "error:invalid_argument")
    add("empty key", "cmd", b'{"action":"time","id":"@IDXX@","":1}', "error:invalid_argument")
    add("__proto__ key", "cmd", b'{"action":"time","id":"@IDXX@","__proto__":{"action":"delete"}}', "error:invalid_argument", field="__proto__")

    # The action itself.
    for label, raw in [("missing", None), ("5", b"5"), ("null", b"null"), ("true", b"true"), ("[]", b"[]"), ("[\"pause\"]", b'["pause"]'),
                       ("{}", b"{}"), ("empty", b'""'), ("PAUSE", b'"PAUSE"'), ("trailing space", b'"pause "'), ("NUL inside", b'"pau\\u0000se"'),
                       ("raw NUL inside", b'"pau\x00se"'), ("explode", b'"explode"'), ("__proto__", b'"__proto__"'), ("constructor", b'"constructor"'),
                       ("delete_all", b'"delete_all"'), ("shell", b'"start; rm -rf /"'), ("full-width", '"ｐａｕｓｅ"'.encode()),
                       ("restart (a word only)", b'"restart"'), ("+30 (a word only)", b'"+30"'), ("snooze 120 (a word only)", b'"snooze 120"'),
                       ("unicode lookalike", '"раuse"'.encode()), ("newline", b'"pause\\n"'), ("invalid UTF-8", b'"pa\xffuse"')]:
        pairs = [("id", ID), ("timer", HX)]
        payload = obj(*pairs) if raw is None else obj(("action", Raw(raw)), *pairs)
        code = "bad_json" if not strict_json(payload.replace(ID.encode(), b"h")) else "unknown_action"
        add(f"action {label}", "cmd", payload, "error:" + code, field="action" if code != "bad_json" else None,
            rid="auto" if code != "bad_json" else None)
        if label in ("missing", "5", "PAUSE", "explode", "full-width", "list (not on a timer topic)"):
            add(f"action {label} (timer cmd)", "timer_cmd", obj(("id", ID)) if raw is None else obj(("action", Raw(raw)), ("id", ID)),
                "error:unknown_action", field="action", timer=HX)
    for action in ("list", "time", "history", "create"):
        add(f"node action {action} on a timer topic", "timer_cmd", obj(("action", action), ("id", ID)), "error:unknown_action", field="action", timer=HX)

    # An unknown key on every action.
    for action in ACTIONS:
        pairs = [("id", ID)]
        if action not in ("list", "time"):
            pairs.append(("timer", HX if action not in ("create",) else "hs2"))
        if action == "create":
            pairs.append(("spec", {"kind": "countdown", "duration": "1m"}))
        if action == "adjust":
            pairs.append(("seconds", 30))
        pairs.append(("colour", "red"))
        add(f"{action}: unknown key", "cmd", cmd_obj(action, pairs), "error", field="colour")

    # ------------------------------------------------------------------------------------
    # Every action x the common fields (id, at, if_revision, timer): hostile values, rotated so
    # that every value meets several actions.
    def action_pairs(action, on_timer_topic):
        """The other fields a valid command of this action needs (against hx)."""
        pairs = []
        if not on_timer_topic and action not in ("list", "time"):
            pairs.append(("timer", HX if action != "create" else "hs3"))
        if action == "create":
            pairs.append(("spec", {"kind": "countdown", "duration": "1m"}))
        if action == "adjust":
            pairs.append(("seconds", 30))
        return pairs

    bad_numbers = [(l, r) for l, r in NUMBERS if not int_ok(r, 0, LATEST_MS) or not int_ok(r, 0, 2**31 - 1)]
    k = 0
    for ai, action in enumerate(ACTIONS):
        timer_topic = action in TIMER_ACTIONS and ai % 2 == 1  # every other timer action on its own topic
        kind, timer = ("timer_cmd", HX) if timer_topic else ("cmd", None)
        base = action_pairs(action, timer_topic)
        # at (0 ... 2100) and if_revision (0 ... 2^31-1): values not in range or not numbers.
        for field, lo, hi in (("at", 0, LATEST_MS), ("if_revision", 0, 2**31 - 1)):
            values = [(l, r) for l, r in NUMBERS if not int_ok(r, lo, hi)]
            for j in range(5):
                label, raw = values[(k + j * 7) % len(values)]
                payload = cmd_obj(action, [("id", ID)] + base + [(field, Raw(raw))])
                syntax_ok = strict_json(payload.replace(ID.encode(), b"h"))
                add(f"{action}: {field} {label}", kind, payload, "error" if syntax_ok else "error:bad_json",
                    field=field if syntax_ok else None, timer=timer, rid="auto" if syntax_ok else None)
            k += 1
        # id: not text, too long, control characters, invalid UTF-8.
        ids = [("5", b"5", None), ("true", b"true", None), ("[]", b"[]", None), ("{}", b"{}", None), ("129 chars", enc("i" * 129), "i" * 129),
               ("60 KB", enc("i" * 60_000), "i" * 60_000), ("newline", b'"a\\nb"', "a\nb"), ("NUL", b'"a\\u0000b"', "a\x00b"),
               ("ANSI escape", b'"\\u001b[2J"', "\x1b[2J"), ("raw newline", b'"a\nb"', None), ("0xFF", b'"\xff"', None),
               ("lone surrogate", b'"\\ud800"', None), ("1.5", b"1.5", None), ("DEL", b'"\\u007f"', "\x7f")]
        for j in range(3):
            label, raw, echo = ids[(ai * 3 + j) % len(ids)]
            payload = cmd_obj(action, [("id", Raw(raw))] + base)
            syntax_ok = strict_json(payload)
            add(f"{action}: id {label}", kind, payload, "error" if syntax_ok else "error:bad_json",
                field="id" if syntax_ok else None, timer=timer, rid=echo if syntax_ok else None)
        # timer: not an id (node topic), or another timer than the topic's.
        if action in ("list", "time"):
            for j in range(2):
                label, raw = BAD_IDS[(ai * 5 + j * 11) % len(BAD_IDS)]
                payload = cmd_obj(action, [("id", ID), ("timer", Raw(raw))])
                syntax_ok = strict_json(payload.replace(ID.encode(), b"h"))
                add(f"{action}: timer {label}", "cmd", payload, "error" if syntax_ok else "error:bad_json",
                    field="timer" if syntax_ok else None, rid="auto" if syntax_ok else None)
        elif timer_topic:
            for label, raw in (("another timer", b'"keep"'), ("an invalid id", b'"KEEP"'), ("5", b"5")):
                add(f"{action}: timer {label} on hx's topic", kind, cmd_obj(action, [("id", ID), ("timer", Raw(raw))] + base),
                    "error", field="timer", timer=HX)
        else:
            rest = [p for p in base if p[0] != "timer"]
            for j in range(4):
                label, raw = BAD_IDS[(ai * 4 + j * 13) % len(BAD_IDS)]
                payload = cmd_obj(action, [("id", ID), ("timer", Raw(raw))] + rest)
                syntax_ok = strict_json(payload.replace(ID.encode(), b"h"))
                add(f"{action}: timer {label}", kind, payload, "error" if syntax_ok else "error:bad_json",
                    field="timer" if syntax_ok else None, rid="auto" if syntax_ok else None)
            if action != "history":
                add(f"{action}: timer missing", kind, cmd_obj(action, [("id", ID)] + rest), "error", field="timer")
                add(f"{action}: timer null", kind, cmd_obj(action, [("id", ID), ("timer", None)] + rest), "error", field="timer")

    # Valid but odd values of the common fields, with commands that change nothing when
    # accepted (refused on the idle hx, or read-only).
    odd = [("at", "-0", b"-0"), ("at", "1e-400", b"1e-400"), ("at", "1e2", b"1e2"), ("at", "null", b"null"), ("at", "0", b"0"),
           ("at", "-0.0", b"-0.0"), ("at", "1E+2", b"1E+2"), ("at", "2100", b"4102444800000"), ("if_revision", "0.1e1", b"0.1e1"),
           ("if_revision", "null", b"null"), ("if_revision", "2^31-1", b"2147483647"), ("if_revision", "-0", b"-0"),
           ("id", "128 chars", enc("o" * 128)), ("id", "unicode", enc("ïd-ü-名前")), ("id", "/ + #", enc("h/+/#")),
           ("id", "emoji", enc("💥" * 10)), ("id", "null", b"null"), ("id", "RTL override", enc("\u202eid"))]
    for j, (field, label, raw) in enumerate(odd):
        for n_action, action in enumerate((REFUSED_ON_IDLE[j % len(REFUSED_ON_IDLE)], READ_ONLY[j % len(READ_ONLY)])):
            if field == "id" and n_action and raw != b"null":
                # A request id of its own: the same id again would get the first command's reply (dedup).
                raw = enc("r" + json.loads(raw)[1:])
            pairs = [(field, Raw(raw))] if field == "id" else [("id", ID), (field, Raw(raw))]
            pairs += action_pairs(action, False)
            rid = (json.loads(raw) if field == "id" else "auto")
            add(f"{action}: {field} {label} (valid)", "cmd", cmd_obj(action, pairs),
                "ok" if action in READ_ONLY else "error", timer=None, rid=rid)

    # ------------------------------------------------------------------------------------
    # start: start_at, name, preset, spec, restart.
    soon = iso_soon_variants(now_ms)
    spec_1h = {"kind": "countdown", "duration": "1h"}
    for label, text in ISO_BAD:
        payload = cmd_obj("start", [("id", ID), ("timer", HX), ("spec", spec_1h), ("start_at", text)])
        add(f"start: start_at {label}", "cmd", payload, "error", field="start_at")
    for label, text in soon + ISO_PAST_OK:
        add(f"start: start_at {label} (valid)", "cmd",
            cmd_obj("start", [("id", ID), ("timer", OKT), ("spec", spec_1h), ("restart", True), ("start_at", text)]), "ok")
    for label, text in ISO_FAR_OK:
        add(f"start: start_at {label} (more than 7 days ahead)", "cmd",
            cmd_obj("start", [("id", ID), ("timer", HX), ("spec", spec_1h), ("start_at", text)]), "error", field="start_at")
    for label, raw in NUMBERS[:30] + [("now + 1 h", str(int(now_ms) + 3_600_000).encode()), ("now + 8 days", str(int(now_ms) + 8 * 86_400_000).encode())]:
        valid_past = int_ok(raw, 0, now_ms) and raw != b"null"
        valid_soon = label == "now + 1 h"
        payload_timer = OKT if (valid_past or valid_soon) else HX
        pairs = [("id", ID), ("timer", payload_timer), ("spec", spec_1h), ("start_at", Raw(raw))] + ([("restart", True)] if payload_timer == OKT else [])
        payload = cmd_obj("start", pairs)
        if raw == b"null":
            continue
        if valid_past or valid_soon:
            add(f"start: start_at {label} (valid)", "cmd", payload, "ok")
        else:
            syntax_ok = strict_json(payload.replace(ID.encode(), b"h"))
            add(f"start: start_at {label}", "cmd", payload, "error" if syntax_ok else "error:bad_json",
                field="start_at" if syntax_ok else None, rid="auto" if syntax_ok else None)
    # the same texts on hx's own topic (a few)
    for label, text in ISO_BAD[:6]:
        add(f"start: start_at {label} (timer cmd)", "timer_cmd", cmd_obj("start", [("id", ID), ("start_at", text)]),
            "error", field="start_at", timer=HX)
    add("start: start_at 60 KB of digits", "cmd", cmd_obj("start", [("id", ID), ("timer", HX), ("start_at", "2" * 60_000)]), "error", field="start_at")
    # name
    names_bad = [("60 KB", "n" * 60_000), ("101 chars", "n" * 101), ("empty", ""), ("spaces only", "   "), ("slash", "a/b"),
                 ("plus", "a+b"), ("hash", "#1"), ("newline", "a\nb"), ("NUL", "a\x00b"), ("tab", "a\tb"), ("ANSI", "\x1b[31mred"),
                 ("DEL", "a\x7fb"), ("NEL", "a\x85b"), ("line separator", "a\u2028b")]
    names_bad_raw = [("5", b"5"), ("true", b"true"), ("[]", b"[]"), ("{}", b"{}"), ("lone surrogate", b'"\\ud800"'), ("0xFF", b'"a\xffb"'),
                     ("overlong", b'"\xc0\xaf"'), ("raw newline", b'"a\nb"')]
    names_ok = [("100 chars", "n" * 100), ("unicode", "Küche — 台所"), ("emoji", "🔥 HIIT"), ("RTL text", "مطبخ"), ("combining", "e\u0301"),
                ("quotes", "a \"b\" 'c'"), ("backslash", "a\\b"), ("HTML", "<img src=x onerror=alert(1)>"), ("SQL", "'; DROP TABLE timers; --")]
    for i, (label, text) in enumerate(names_bad):
        act = ("create", "start")[i % 2]
        tid = f"hs{10 + i}"
        add(f"{act}: name {label}", "cmd", cmd_obj(act, [("id", ID), ("timer", tid), ("name", text), ("spec", spec_1h)]), "error", field="name")
    for i, (label, raw) in enumerate(names_bad_raw):
        act = ("create", "start")[i % 2]
        payload = cmd_obj(act, [("id", ID), ("timer", f"hs{40 + i}"), ("name", Raw(raw)), ("spec", spec_1h)])
        syntax_ok = strict_json(payload.replace(ID.encode(), b"h"))
        add(f"{act}: name {label}", "cmd", payload, "error" if syntax_ok else "error:bad_json",
            field="name" if syntax_ok else None, rid="auto" if syntax_ok else None)
    for i, (label, text) in enumerate(names_ok):
        add(f"create: name {label} (valid)", "cmd", cmd_obj("create", [("id", ID), ("timer", f"okc{i}"), ("name", text), ("spec", spec_1h)]), "ok")
    # preset
    presets = [("unknown", b'"nope"', "preset"), ("empty", b'""', "preset"), ("5", b"5", "preset"), ("null", b"null", "preset"),
               ("[]", b"[]", "preset"), ("{}", b"{}", "preset"), ("TABATA", b'"TABATA"', "preset"), ("NUL", b'"tabata\\u0000"', "preset"),
               ("60 KB", enc("t" * 60_000), "preset"), ("path", b'"../../etc/passwd"', "preset"), ("full-width", '"ｔａｂａｔａ"'.encode(), "preset")]
    for label, raw, field in presets:
        add(f"start: preset {label}", "cmd", cmd_obj("start", [("id", ID), ("timer", HX), ("preset", Raw(raw))]), "error", field=field)
    for label, pairs, field in [("emom rounds 1e9", [("preset", "emom"), ("rounds", 1_000_000_000)], "rounds"),
                                ("emom rounds -1", [("preset", "emom"), ("rounds", -1)], "rounds"),
                                ("tabata unknown parameter", [("preset", "tabata"), ("colour", "red")], "colour"),
                                ("amrap duration 10^13 h", [("preset", "amrap"), ("duration", "10000000000000h")], "duration"),
                                ("for_time cap -1s", [("preset", "for_time"), ("cap", "-1s")], "cap"),
                                ("preset and spec", [("preset", "tabata"), ("spec", spec_1h)], "spec"),
                                ("tabata rounds 1e309", [("preset", "tabata"), ("rounds", Raw(b"1e309"))], "rounds"),
                                ("tabata work NaN", [("preset", "tabata"), ("work", Raw(b"NaN"))], None)]:
        payload = cmd_obj("start", [("id", ID), ("timer", HX)] + pairs)
        syntax_ok = strict_json(payload.replace(ID.encode(), b"h"))
        add(f"start: {label}", "cmd", payload, "error" if syntax_ok else "error:bad_json", field=field if syntax_ok else None,
            rid="auto" if syntax_ok else None)
    add("start: preset tabata (valid)", "cmd", cmd_obj("start", [("id", ID), ("timer", OKT), ("preset", "tabata"), ("restart", True)]), "ok")
    # Whole numbers may come as text (Home Assistant's templates render numbers as strings):
    # accepted, by design (docs/API.md).
    add("start: emom rounds \"12\" (a whole number as text)", "cmd",
        cmd_obj("start", [("id", ID), ("timer", OKT), ("preset", "emom"), ("rounds", "12"), ("restart", True)]), "ok")
    add("start: spec rounds \"8\" (a whole number as text)", "cmd",
        cmd_obj("start", [("id", ID), ("timer", OKT), ("spec", {"kind": "interval", "work": "1s", "rounds": "8"}), ("restart", True)]), "ok")
    # restart
    for label, raw in [("\"true\"", b'"true"'), ("1", b"1"), ("0", b"0"), ("\"yes\"", b'"yes"'), ("[]", b"[]"), ("{}", b"{}"), ("[true]", b"[true]")]:
        add(f"start: restart {label}", "cmd", cmd_obj("start", [("id", ID), ("timer", HX), ("restart", Raw(raw))]), "error", field="restart")

    # spec, on create (fresh ids) and start: not an object, unknown kinds, every kind's fields.
    specs = [
        ("not an object: 5", Raw(b"5"), "spec"), ("not an object: text", "countdown", "spec"), ("not an object: []", [], "spec"),
        ("not an object: null", None, "spec"), ("not an object: true", True, "spec"), ("empty", {}, "kind"),
        ("kind unknown", {"kind": "nope", "duration": "1m"}, "kind"), ("kind 5", {"kind": 5, "duration": "1m"}, "kind"),
        ("kind COUNTDOWN", {"kind": "COUNTDOWN", "duration": "1m"}, "kind"), ("countdown without duration", {"kind": "countdown"}, "duration"),
        ("interval without work", {"kind": "interval", "rounds": 3}, "work"), ("unknown key", {"kind": "countdown", "duration": "1m", "colour": 1}, "colour"),
        ("stopwatch with ack", {"kind": "stopwatch", "ack": True}, "ack"),
        ("rounds 10^9", {"kind": "interval", "work": "1s", "rounds": 1_000_000_000}, "rounds"), ("rounds 1001", {"kind": "interval", "work": "1s", "rounds": 1001}, "rounds"),
        ("rounds 0", {"kind": "interval", "work": "1s", "rounds": 0}, "rounds"), ("rounds -1", {"kind": "interval", "work": "1s", "rounds": -1}, "rounds"),
        ("rounds 1.5", {"kind": "interval", "work": "1s", "rounds": 1.5}, "rounds"),
        ("rounds 1e309", {"kind": "interval", "work": "1s", "rounds": Raw(b"1e309")}, "rounds"), ("sets 101", {"kind": "interval", "work": "1s", "sets": 101}, "sets"),
        ("200,000 segments by rounds x exercises x sets", {"kind": "interval", "work": "1s", "rest": "1s", "rounds": 1000, "sets": 2,
                                                            "exercises": [f"e{i}" for i in range(100)]}, "segments"),
        ("101 exercises", {"kind": "interval", "work": "1s", "exercises": [f"e{i}" for i in range(101)]}, "exercises"),
        ("10,000 exercises", {"kind": "interval", "work": "1s", "exercises": [f"e{i}" for i in range(10_000)]}, "exercises"),
        ("an empty exercise", {"kind": "interval", "work": "1s", "exercises": [""]}, "exercises"),
        ("an exercise 5", {"kind": "interval", "work": "1s", "exercises": [5]}, "exercises"),
        ("a 60 KB exercise name", {"kind": "interval", "work": "1s", "exercises": ["x" * 60_000]}, "exercises"),
        ("exercise with NUL", {"kind": "interval", "work": "1s", "exercises": ["a\x00b"]}, "exercises"),
        ("exercises an object", {"kind": "interval", "work": "1s", "exercises": {"a": 1}}, "exercises"),
        ("a 60 KB label", {"kind": "countdown", "duration": "1m", "label": "l" * 60_000}, "label"),
        ("a 60 KB rest exercise", {"kind": "rest", "exercise": "l" * 60_000}, "exercise"),
        ("a 60 KB next", {"kind": "rest", "next": "l" * 60_000}, "next"),
        ("label with newline", {"kind": "countdown", "duration": "1m", "label": "a\nb"}, "label"),
        ("21,000 empty segments", {"kind": "program", "segments": [{}] * 21_000}, "segments"),
        ("200,000 segments (over the size limit)", {"kind": "program", "segments": [{"kind": "work", "duration": 1}] * 200_000}, "segments"),
        ("2,000 one-second segments (valid)", {"kind": "program", "segments": [{"kind": "work", "duration": 1}] * 2000}, "=ok"),
        ("segments not an array", {"kind": "program", "segments": {"kind": "work"}}, "segments"),
        ("segments empty", {"kind": "program", "segments": []}, "segments"),
        ("segment kind unknown", {"kind": "program", "segments": [{"kind": "nap", "duration": "1m"}]}, "kind"),
        ("segment round 10^9", {"kind": "program", "segments": [{"kind": "work", "duration": "1m", "round": 1_000_000_000}]}, "round"),
        ("segment a 60 KB label", {"kind": "program", "segments": [{"kind": "work", "duration": "1m", "label": "s" * 60_000}]}, "label"),
        ("hr_source unknown", {"kind": "countdown", "duration": "1m", "hr_source": "zzz"}, "hr_source"),
        ("hr_source 5", {"kind": "countdown", "duration": "1m", "hr_source": 5}, "hr_source"),
        ("cues [0]", {"kind": "countdown", "duration": "1m", "cues": [0]}, "cues"),
        ("cues [3601]", {"kind": "countdown", "duration": "1m", "cues": [3601]}, "cues"),
        ("11 cues", {"kind": "countdown", "duration": "1m", "cues": list(range(1, 12))}, "cues"),
        ("cues [\"a\"]", {"kind": "countdown", "duration": "1m", "cues": ["a"]}, "cues"),
        ("alert_interval 0", {"kind": "countdown", "duration": "1m", "alert_interval": "0s"}, "alert_interval"),
        ("alert_interval 10^13 h", {"kind": "countdown", "duration": "1m", "alert_interval": "10000000000000h"}, "alert_interval"),
        ("auto_dismiss -1s", {"kind": "countdown", "duration": "1m", "auto_dismiss": "-1s"}, "auto_dismiss"),
        ("ack \"yes\"", {"kind": "countdown", "duration": "1m", "ack": "yes"}, "ack"),
        ("skip_last_rest 1", {"kind": "interval", "work": "1s", "skip_last_rest": 1}, "skip_last_rest"),
        ("preset in a spec's preset", {"preset": "nope"}, "preset"),
        ("32,000-deep array as a label", {"kind": "countdown", "duration": "1m", "label": Raw(b"[" * 30_000 + b"]" * 30_000)}, None),
    ]
    for i, (label, spec, field) in enumerate(specs):
        act = ("create", "start")[i % 2]
        payload = cmd_obj(act, [("id", ID), ("timer", f"hs{100 + i}" if field != "=ok" else f"oks{i}"),
                                ("spec", spec if isinstance(spec, Raw) else Raw(obj_spec(spec)))])
        syntax_ok = strict_json(payload.replace(ID.encode(), b"h"))
        if field == "=ok":
            add(f"{act}: spec {label}", "cmd", payload, "ok")
        elif len(payload) > LIMIT:
            add(f"{act}: spec {label}", "cmd", payload, "error:payload_too_large", rid=None)
        else:
            add(f"{act}: spec {label}", "cmd", payload, "error" if syntax_ok else "error:bad_json",
                field=field if syntax_ok else None, rid="auto" if syntax_ok else None)
    # durations crossed with the duration fields of every kind
    duration_fields = [("countdown", "duration", {}), ("interval", "work", {}), ("interval", "rest", {"work": "1s"}),
                       ("interval", "prepare", {"work": "1s"}), ("interval", "set_rest", {"work": "1s", "sets": 2}),
                       ("interval", "cooldown", {"work": "1s"}), ("rest", "duration", {}), ("stopwatch", "target", {}),
                       ("program", "duration", None)]
    n = 0
    for di, (label, raw, valid) in enumerate(DURATIONS):
        for j in range(2 if valid is False else 1):
            kind_, key, extra = duration_fields[(di * 2 + j) % len(duration_fields)]
            if extra is None:
                spec_raw = b'{"kind":"program","segments":[{"kind":"work","duration":' + raw + b"}]}"
            else:
                spec_raw = obj(("kind", kind_), *extra.items(), (key, Raw(raw)))
            tid = f"hs{300 + n}" if valid is False else f"okd{n}"
            n += 1
            payload = cmd_obj("create", [("id", ID), ("timer", tid), ("spec", Raw(spec_raw))])
            syntax_ok = strict_json(payload.replace(ID.encode(), b"h"))
            if valid is True:
                add(f"create: {kind_} {key} {label}", "cmd", payload, "ok")
            elif valid is None:
                add(f"create: {kind_} {key} {label}", "cmd", payload, "any")
            else:
                # "rest" may be 0 s (dropped), so 0 is valid there; the others take 1 s at least.
                if key in ("rest", "prepare", "set_rest", "cooldown") and label in ("0s", "0 (number)", "1e-400 (number)"):
                    add(f"create: {kind_} {key} {label} (0 s is valid here)", "cmd", payload, "any")
                    continue
                add(f"create: {kind_} {key} {label}", "cmd", payload, "error" if syntax_ok else "error:bad_json",
                    field=key if syntax_ok else None, rid="auto" if syntax_ok else None)

    # ------------------------------------------------------------------------------------
    # adjust / snooze: seconds.
    secs = NUMBERS + [("0", b"0"), ("86401", b"86401"), ("-86401", b"-86401"), ("1e9", b"1e9"), ("\"+30\"", b'"+30"'), ("\"30s\"", b'"30s"')]
    for action, lo, hi in (("adjust", -86_400, 86_400), ("snooze", 1, 86_400)):
        for i, (label, raw) in enumerate(secs):
            ok_value = int_ok(raw, lo, hi) and not (action == "adjust" and (raw == b"null" or number_of(raw) == 0))
            on_topic = i % 3 == 2
            pairs = [("id", ID)] + ([] if on_topic else [("timer", HX)]) + [("seconds", Raw(raw))]
            payload = cmd_obj(action, pairs)
            syntax_ok = strict_json(payload.replace(ID.encode(), b"h"))
            kind, timer = ("timer_cmd", HX) if on_topic else ("cmd", None)
            if ok_value:
                add(f"{action}: seconds {label} (valid: refused on the idle hx)", kind, payload, "error:invalid_state", timer=timer)
            else:
                add(f"{action}: seconds {label}", kind, payload, "error" if syntax_ok else "error:bad_json",
                    field="seconds" if syntax_ok else None, timer=timer, rid="auto" if syntax_ok else None)
    for label, raw in BIG_NUMBERS:
        add(f"adjust: seconds {label}", "cmd", cmd_obj("adjust", [("id", ID), ("timer", HX), ("seconds", Raw(raw))]), "error", field="seconds")

    # history: since, limit.
    for label, raw in NUMBERS + [("0", b"0"), ("1", b"1"), ("1000", b"1000"), ("1001", b"1001"), ("1e9", b"1e9")]:
        payload = cmd_obj("history", [("id", ID), ("limit", Raw(raw))])
        syntax_ok = strict_json(payload.replace(ID.encode(), b"h"))
        if int_ok(raw, 1, 1000):
            add(f"history: limit {label} (valid)", "cmd", payload, "ok")
        else:
            add(f"history: limit {label}", "cmd", payload, "error" if syntax_ok else "error:bad_json",
                field="limit" if syntax_ok else None, rid="auto" if syntax_ok else None)
    for i, (label, text) in enumerate(ISO_BAD):
        pairs = [("id", ID)] + ([("timer", HX)] if i % 2 else []) + [("since", text)]
        add(f"history: since {label}", "cmd", cmd_obj("history", pairs), "error", field="since")
    for label, text in ISO_PAST_OK + ISO_FAR_OK + soon[:6]:
        add(f"history: since {label} (valid)", "cmd", cmd_obj("history", [("id", ID), ("since", text)]), "ok")
    since_values = NUMBERS[::3] + BIG_NUMBERS + [(l, r) for l, r in NUMBERS if r in (b"true", b"[]", b"{}", b'{"v":5}', b"[5]", b"-1")]
    for label, raw in dict(since_values).items():
        payload = cmd_obj("history", [("id", ID), ("since", Raw(raw))])
        syntax_ok = strict_json(payload.replace(ID.encode(), b"h"))
        if int_ok(raw, 0, LATEST_MS):
            add(f"history: since {label} (valid)", "cmd", payload, "ok")
        else:
            add(f"history: since {label}", "cmd", payload, "error" if syntax_ok else "error:bad_json",
                field="since" if syntax_ok else None, rid="auto" if syntax_ok else None)

    # ------------------------------------------------------------------------------------
    # Plain words on a timer's topic (hx is idle: a valid word is refused as invalid_state).
    words = [
        ("pause", b"pause", "error:invalid_state"), ("PAUSE", b"PAUSE", "error:invalid_state"), (" pause (spaces)", b"  pause  ", "error:invalid_state"),
        ("pause with newlines", b"\npause\r\n", "error:invalid_state"), ("+30", b"+30", "error:invalid_state"), ("-10", b"-10", "error:invalid_state"),
        ("snooze 120", b"snooze 120", "error:invalid_state"), ("snooze", b"snooze", "error:invalid_state"),
        ("pause\\0", b"pause\x00", "error"), ("\\0pause", b"\x00pause", "error"), ("pa\\0use", b"pa\x00use", "error"),
        ("NUL only word", b"\x00\x00", "error"), ("+0", b"+0", "error"), ("-0", b"-0", "error"), ("+86401", b"+86401", "error"),
        ("-86401", b"-86401", "error"), ("+1e9", b"+1e9", "error"), ("+NaN", b"+NaN", "error"), ("+inf", b"+inf", "error"),
        ("+full-width 40", "+４０".encode(), "error"), ("+Arabic-Indic 30", "+٣٠".encode(), "error"), ("+30s", b"+30s", "error"),
        ("++30", b"++30", "error"), ("+-30", b"+-30", "error"), ("--30", b"--30", "error"), ("-9223372036854775808", b"-9223372036854775808", "error"),
        ("--9223372036854775808", b"--9223372036854775808", "error"), ("+99999999999999999999", b"+99999999999999999999", "error"),
        ("+ 30", b"+ 30", "error"), ("snooze 0", b"snooze 0", "error"), ("snooze -5", b"snooze -5", "error"),
        ("snooze 86401", b"snooze 86401", "error"), ("snooze 1e309", b"snooze 1e309", "error"),
        ("snooze 99999999999999999999", b"snooze 99999999999999999999", "error"), ("snooze full-width 120", "snooze １２０".encode(), "error"),
        ("snooze 120 extra", b"snooze 120 extra", "error"), ("adjust", b"adjust", "error"), ("adjust 0", b"adjust 0", "error"),
        ("adjust 1e9", b"adjust 1000000000", "error"), ("pause resume", b"pause resume", "error"), ("pause;cancel", b"pause;cancel", "error"),
        ("full-width pause", "ｐａｕｓｅ".encode(), "error"), ("Cyrillic lookalike", "раuse".encode(), "error"),
        ("soft hyphen inside", "pau\u00adse".encode(), "error"), ("zero-width space inside", "pau\u200bse".encode(), "error"),
        ("BOM + pause", b"\xef\xbb\xbfpause", "error"), ("NBSP around", "\u00a0pause\u00a0".encode(), "error:invalid_state"),
        ("60 KB word", b"p" * 60_000, "error"), ("60 KB of +", b"+" * 60_000, "error"), ("20,000 digits", b"+" + b"9" * 20_000, "error"),
        ("invalid UTF-8 (0xFF)", b"pa\xffuse", "error"), ("invalid UTF-8 (overlong)", b"\xc0\xafpause", "error"),
        ("invalid UTF-8 (surrogate)", b"pause\xed\xa0\x80", "error"), ("invalid UTF-8 (truncated)", b"pause\xe2\x82", "error"),
        ("invalid UTF-8 (above U+10FFFF)", b"\xf4\x90\x80\x80", "error"), ("invalid UTF-8 (pa\\xc3\\x28use)", b"pa\xc3\x28use", "error"),
        ("Latin-1 word", b"pa\xfcse", "error"), ("explode", b"explode", "error:unknown_action"), ("list", b"list", "error:unknown_action"),
        ("pa\\tuse (tab inside)", b"pa\tuse", "any"), ("pause!", b"pause!", "error"), ("?pause", b"?pause", "error"),
        ("shell", b"$(reboot)", "error"), ("newline inside", b"pau\nse", "any"),
    ]
    for label, payload, expect in words:
        add(f"word {label}", "timer_cmd", payload, expect, timer=HX, rid=None)
    # Hostile ids in the topic itself (a word and a JSON command each).
    for label, tid in [("uppercase", "HX"), ("..", ".."), ("65 chars", "a" * 65), ("unicode", "kéep"),
                       ("leading -", "-hx"), ("leading _", "_hx"), ("space", "h x"), ("full-width", "ｈｘ"), ("dot", "h.x"),
                       ("$", "$hx"), ("1000 chars", "a" * 1000), ("RTL override", "\u202ehx")]:
        add(f"topic timer id {label} (word)", "timer_cmd", b"pause", "error:invalid_timer_id", timer=tid, rid=None)
        add(f"topic timer id {label} (JSON)", "timer_cmd", obj(("action", "pause"), ("id", ID)), "error:invalid_timer_id", timer=tid)
    # An empty level (`<base>/timers//cmd`) matches the node's `timers/+/cmd` subscription too.
    add("topic timer id empty level (word)", "timer_cmd", b"pause", "error:invalid_timer_id", timer="", rid=None)
    add("topic timer id uppercase (delete word)", "timer_cmd", b"delete", "error:invalid_timer_id", timer="KEEP", rid=None)
    add("topic timer id .. (start JSON with spec)", "timer_cmd", obj(("action", "start"), ("id", ID), ("spec", spec_1h)), "error:invalid_timer_id", timer="..")

    # ------------------------------------------------------------------------------------
    # The clock topic.
    time_cases = [
        ("empty (valid)", b"", "ok", None, None), ("{} (valid)", b"{}", "ok", None, None), ("id (valid)", obj(("id", ID)), "ok", None, "auto"),
        ("action time (valid)", obj(("action", "time"), ("id", ID)), "ok", None, "auto"), ("id null (valid)", b'{"id":null}', "ok", None, None),
        ("spaces (valid)", b"   ", "ok", None, None), ("newline (valid)", b"\n", "ok", None, None),
        ("JSON white space around (valid)", b"\r\n " + obj(("id", ID)) + b"\t", "ok", None, "auto"),
        ("id 128 chars (valid)", obj(("id", "t" * 128)), "ok", None, "t" * 128),
        ("id 5", b'{"id":5}', "error", "id", None), ("id 129 chars", obj(("id", "t" * 129)), "error", "id", "t" * 129),
        ("id 60 KB", obj(("id", "t" * 60_000)), "error", "id", "t" * 60_000), ("id NUL", b'{"id":"a\\u0000"}', "error", "id", "a\x00"),
        ("id newline", b'{"id":"a\\nb"}', "error", "id", "a\nb"), ("id []", b'{"id":[]}', "error", "id", None), ("id {}", b'{"id":{"id":"x"}}', "error", "id", None),
        ("id true", b'{"id":true}', "error", "id", None), ("action pause", obj(("action", "pause"), ("id", ID)), "error:unknown_action", None, "auto"),
        ("action delete", obj(("action", "delete"), ("timer", "hx"), ("id", ID)), "error", None, "auto"),
        ("action 5", obj(("action", 5), ("id", ID)), "error", None, "auto"), ("action null", b'{"action":null}', "any", None, None),
        ("action TIME", obj(("action", "TIME"), ("id", ID)), "error", None, "auto"),
        ("unknown key", obj(("id", ID), ("foo", 1)), "error:invalid_argument", "foo", "auto"),
        ("timer key", obj(("id", ID), ("timer", "keep")), "error:invalid_argument", "timer", "auto"),
        ("6,000 unknown keys", b'{"id":"@IDXX@",' + b",".join(b'"%x":0' % i for i in range(6_000)) + b"}", "error:invalid_argument", None, "auto"),
        ("duplicate id", b'{"id":"a","id":"b"}', "error:bad_json", None, None), ("[]", b"[]", "error:bad_json", None, None),
        ("\"x\"", b'"x"', "error:bad_json", None, None), ("5", b"5", "error:bad_json", None, None), ("null", b"null", "error:bad_json", None, None),
        ("true", b"true", "error:bad_json", None, None), ("word time", b"time", "error:bad_json", None, None),
        ("word now", b"now", "error:bad_json", None, None), ("NUL", b"\x00", "error", None, None), ("BOM + {}", b"\xef\xbb\xbf{}", "any", None, None),
        ("invalid UTF-8", b'{"id":"\xff"}', "error:bad_json", None, None), ("overlong", b"\xc0\xaf", "error", None, None),
        ("trailing comma", b'{"id":"x",}', "error:bad_json", None, None), ("NaN", b'{"id":NaN}', "error:bad_json", None, None),
        ("10,000-deep object", b'{"id":' + b'{"a":' * 10_000 + b"1" + b"}" * 10_000 + b"}", "error:bad_json", None, None),
        ("100,000-deep array", b"[" * 100_000 + b"]" * 100_000, "error:payload_too_large", None, None),
        ("16 MiB", b" " * (16 << 20), "error:payload_too_large", None, None), ("60,000 open brackets", b"[" * 60_000, "error:bad_json", None, None),
        ("lone surrogate id", b'{"id":"\\ud800"}', "error:bad_json", None, None),
    ]
    for label, payload, expect, field, rid in time_cases:
        add(f"time topic: {label}", "time", payload, expect, field=field, rid=rid)

    # ------------------------------------------------------------------------------------
    # Heart rate: the plain source hr/a (bound to timer hra), the JSON source hr/b (field
    # data.bpm, bound to hrb). A valid reading shows in the bound timer's state.
    hr_plain = [
        ("60 (valid, first)", b"60", "hr:60"), ("nan", b"nan", "none"), ("NaN", b"NaN", "none"), ("inf", b"inf", "none"),
        ("-inf", b"-inf", "none"), ("Infinity", b"Infinity", "none"), ("-1", b"-1", "none"), ("0", b"0", "none"), ("-0", b"-0", "none"),
        ("1e20", b"1e20", "none"), ("1e309", b"1e309", "none"), ("-1e309", b"-1e309", "none"), ("9223372036854775808", b"9223372036854775808", "none"),
        ("0x50", b"0x50", "none"), ("0x1p6 (hex float)", b"0x1p6", "none"), ("142abc", b"142abc", "none"), ("4 KB of digits", b"9" * 4096, "none"),
        ("4 KB of digits, 1 first", b"1" + b"0" * 4095, "none"), ("empty", b"", "none"), ("spaces", b"   ", "none"), ("24.4", b"24.4", "none"),
        ("250.6", b"250.6", "none"), ("251", b"251", "none"), ("full-width 142", "１４２".encode(), "none"), ("Arabic-Indic 142", "١٤٢".encode(), "none"),
        ("NUL + 142", b"\x00142", "none"), ("142 + NUL", b"142\x00", "none"), ("0xFF", b"\xff", "none"), ("142 + 0xFF", b"142\xff", "none"),
        ("JSON object", b'{"bpm":142}', "none"), ("JSON array", b"[142]", "none"), ("true", b"true", "none"), ("1_000", b"1_000", "none"),
        ("142,5", b"142,5", "none"), ("1 MiB of digits", b"7" * (1 << 20), "none"), ("65,537 bytes", b"1" * (LIMIT + 1), "none"),
        ("100,000-deep array", b"[" * 100_000 + b"]" * 100_000, "none"), ("1e2", b"1e2", "any"), ("+90", b"+90", "any"),
        (" 142 (spaces, valid)", b" 142 ", "hr:142"), ("\\n143\\n (newlines, valid)", b"\n143\n", "hr:143"),
        ("\\t144\\r\\n (valid)", b"\t144\r\n", "hr:144"), ("145.0 (valid)", b"145.0", "hr:145"), ("25 (lowest, valid)", b"25", "hr:25"),
        ("250 (highest, valid)", b"250", "hr:250"), ("146.4 (rounds to 146, valid)", b"146.4", "hr:146"),
    ]
    for label, payload, expect in hr_plain:
        add(f"hr a: {label}", "hr", payload, expect, rid=None)
    hr_json = [
        ("bpm 70 (valid, first)", b'{"data":{"bpm":70}}', "hr:70"), ("bpm NaN", b'{"data":{"bpm":NaN}}', "none"),
        ("bpm 1e309", b'{"data":{"bpm":1e309}}', "none"), ("bpm -1", b'{"data":{"bpm":-1}}', "none"), ("bpm 1e20", b'{"data":{"bpm":1e20}}', "none"),
        ("bpm 2^63", b'{"data":{"bpm":9223372036854775808}}', "none"), ("bpm null", b'{"data":{"bpm":null}}', "none"),
        ("bpm true", b'{"data":{"bpm":true}}', "none"), ("bpm []", b'{"data":{"bpm":[142]}}', "none"), ("bpm {}", b'{"data":{"bpm":{"v":142}}}', "none"),
        ("bpm \"nan\"", b'{"data":{"bpm":"nan"}}', "none"), ("bpm \"inf\"", b'{"data":{"bpm":"inf"}}', "none"),
        ("bpm \"0x50\"", b'{"data":{"bpm":"0x50"}}', "none"), ("bpm \"142abc\"", b'{"data":{"bpm":"142abc"}}', "none"),
        ("bpm 4 KB of digits", b'{"data":{"bpm":' + b"9" * 4096 + b"}}", "none"), ("no field", b'{"data":{}}', "none"), ("no data", b"{}", "none"),
        ("data an array", b'{"data":[142]}', "none"), ("dotted key", b'{"data.bpm":142}', "none"), ("plain number", b"142", "none"),
        ("empty", b"", "none"), ("JSON null", b"null", "none"), ("duplicate bpm", b'{"data":{"bpm":142,"bpm":60}}', "none"),
        ("invalid UTF-8", b'{"data":{"bpm":142,"x":"\xff"}}', "none"), ("trailing comma", b'{"data":{"bpm":142,}}', "none"),
        ("100,000-deep array", b"[" * 100_000 + b"]" * 100_000, "none"), ("100,000-deep object", b'{"data":' * 100_000 + b"1" + b"}" * 100_000, "none"),
        ("100,000-deep under data", b'{"data":{"bpm":142,"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}}", "none"),
        ("600-deep array", b"[" * 600 + b"]" * 600, "none"), ("1 MiB string", b'{"data":{"bpm":142,"x":"' + b"x" * (1 << 20) + b'"}}', "any"),
        ("16 MiB", b'{"data":{"bpm":"' + b"1" * (16 << 20) + b'"}}', "none"), ("60,000 open brackets", b"[" * 60_000, "none"),
        ("bpm \"1e2\"", b'{"data":{"bpm":"1e2"}}', "any"),
        ("bpm 141.6 (valid)", b'{"data":{"bpm":141.6}}', "hr:142"), ("bpm \"143\" (text, valid)", b'{"data":{"bpm":"143"}}', "hr:143"),
        ("white space around (valid)", b'\n {"data":{"bpm":144}} \n', "hr:144"), ("BOM + JSON", b'\xef\xbb\xbf{"data":{"bpm":145}}', "any"),
        ("extra fields (valid)", b'{"t":1,"data":{"bpm":146,"rr":[800,810]}}', "hr:146"),
    ]
    for label, payload, expect in hr_json:
        add(f"hr b: {label}", "hr_json", payload, expect, rid=None)

    # Home Assistant's birth topic: only a live `online` asks for the configs again.
    for label, payload, expect in [("offline", b"offline", "none"), ("empty", b"", "none"), ("ONLINE", b"ONLINE", "none"),
                                   ("online + newline", b"online\n", "none"), (" online", b" online", "none"), ("online + NUL", b"online\x00", "none"),
                                   ("0xFF", b"\xff", "none"), ("JSON", b'{"state":"online"}', "none"), ("60 KB", b"online" * 10_000, "none"),
                                   ("1 MiB", b"o" * (1 << 20), "none"), ("16 MiB", b"n" * (16 << 20), "none"),
                                   ("100,000-deep array", b"[" * 100_000 + b"]" * 100_000, "none"), ("invalid UTF-8 online", b"onl\xc0\xafine", "none"),
                                   ("full-width online", "ｏｎｌｉｎｅ".encode(), "none"), ("online (valid)", b"online", "ha_online")]:
        add(f"ha status: {label}", "ha_status", payload, expect, rid=None)

    # A forged log line in every value a message may echo (the suite checks the node's log:
    # FORGED_MARK must not start a line of it).
    forged = "x\n2026-01-01T00:00:00+0000 critical pacer: " + FORGED_MARK + "\r\u0000"
    spec_c = {"kind": "countdown", "duration": "1m"}
    for label, payload, field in [
        ("key", obj(("action", "time"), ("id", ID), (forged, 1)), None),
        ("action", obj(("action", forged), ("id", ID), ("timer", HX)), "action"),
        ("preset", obj(("action", "start"), ("id", ID), ("timer", HX), ("preset", forged)), "preset"),
        ("preset parameter", obj(("action", "start"), ("id", ID), ("timer", HX), ("preset", "tabata"), (forged, 1)), None),
        ("spec kind", obj(("action", "create"), ("id", ID), ("timer", "hslog1"), ("spec", {"kind": forged})), "kind"),
        ("spec key", obj(("action", "create"), ("id", ID), ("timer", "hslog2"), ("spec", dict(spec_c, **{forged: 1}))), None),
        ("duration", obj(("action", "create"), ("id", ID), ("timer", "hslog3"), ("spec", {"kind": "countdown", "duration": forged})), "duration"),
        ("hr_source", obj(("action", "create"), ("id", ID), ("timer", "hslog4"), ("spec", dict(spec_c, hr_source=forged))), "hr_source"),
        ("segment kind", obj(("action", "create"), ("id", ID), ("timer", "hslog5"), ("spec", {"kind": "program", "segments": [{"kind": forged}]})), "kind"),
        ("label", obj(("action", "create"), ("id", ID), ("timer", "hslog6"), ("spec", dict(spec_c, label=forged))), "label"),
        ("exercise", obj(("action", "create"), ("id", ID), ("timer", "hslog7"), ("spec", {"kind": "interval", "work": "1s", "exercises": [forged]})), "exercises"),
        ("name", obj(("action", "create"), ("id", ID), ("timer", "hslog8"), ("name", forged), ("spec", spec_c)), "name"),
        ("timer", obj(("action", "pause"), ("id", ID), ("timer", forged)), "timer"),
        ("start_at", obj(("action", "start"), ("id", ID), ("timer", HX), ("start_at", forged)), "start_at"),
        ("since", obj(("action", "history"), ("id", ID), ("since", forged)), "since"),
        ("request id", obj(("action", "time"), ("id", forged)), "id"),
        ("clock request key", obj(("id", ID), (forged, 1)), None),
    ]:
        add(f"log injection: newline in {label}", "time" if label == "clock request key" else "cmd", payload, "error", field=field,
            rid=forged if label == "request id" else "auto")
    add("log injection: newline in a word", "timer_cmd", forged.replace("\u0000", "").encode(), "error", timer=HX, rid=None)
    add("log injection: newline in a word (snooze)", "timer_cmd", ("snooze " + forged).encode(), "error", timer=HX, rid=None)

    # The first hostile cases, kept as they were written (on hx instead of keep).
    nested = "[" * 10_000 + "]" * 10_000
    for label, kind, payload, expected in [
        ("1 MiB payload", "cmd", b'{"action":"time","pad":"' + b"x" * (1 << 20) + b'"}', "payload_too_large"),
        ("16 MiB payload", "timer_cmd", b"x" * (16 << 20), "payload_too_large"),
        ("10,000-level nested array", "cmd", ('{"action":"time","x":' + nested + "}").encode(), None),
        ("10,000-level nested object", "cmd", ('{"a":' * 10_000 + "1" + "}" * 10_000).encode(), None),
        ("invalid UTF-8 JSON", "cmd", b'{"action":"create","timer":"k\xff\xfe","spec":{"kind":"countdown","duration":"1m"}}', None),
        ("invalid UTF-8 word", "timer_cmd", b"pa\xc3\x28use", None),
        ("lone surrogate escape", "cmd", b'{"action":"create","timer":"x","name":"\\ud800","spec":{"kind":"countdown","duration":"1m"}}', None),
        ("NUL in an id", "cmd", b'{"action":"create","timer":"a\\u0000b","spec":{"kind":"countdown","duration":"1m"}}', None),
        ("raw NUL byte in a payload", "timer_cmd", b"pause\x00", None),
        ("id with / + #", "cmd", b'{"action":"create","timer":"a/+/#","spec":{"kind":"countdown","duration":"1m"}}', "invalid_timer_id"),
        ("request id with newline", "cmd", b'{"action":"time","id":"a\\nb"}', None),
        ("request id of 10,000 chars", "cmd", ('{"action":"time","id":"' + "i" * 10_000 + '"}').encode(), None),
        ("duration 1e308", "cmd", b'{"action":"create","timer":"big","spec":{"kind":"countdown","duration":1e308}}', "invalid_spec"),
        ("duration 1e309 (overflows a double)", "cmd", b'{"action":"create","timer":"big","spec":{"kind":"countdown","duration":1e309}}', None),
        ("duration -0", "cmd", b'{"action":"create","timer":"big","spec":{"kind":"countdown","duration":-0}}', "invalid_spec"),
        ("duration -0.0", "cmd", b'{"action":"create","timer":"big","spec":{"kind":"countdown","duration":-0.0}}', "invalid_spec"),
        ("duration \"NaN\"", "cmd", b'{"action":"create","timer":"big","spec":{"kind":"countdown","duration":"NaN"}}', "invalid_spec"),
        ("duration NaN (bare)", "cmd", b'{"action":"create","timer":"big","spec":{"kind":"countdown","duration":NaN}}', "bad_json"),
        ("duration \"inf\"", "cmd", b'{"action":"create","timer":"big","spec":{"kind":"countdown","duration":"inf"}}', "invalid_spec"),
        ("duration 10^12 s", "cmd", b'{"action":"create","timer":"big","spec":{"kind":"countdown","duration":1000000000000}}', "invalid_spec"),
        ("duration \"1000000000000s\"", "cmd", b'{"action":"create","timer":"big","spec":{"kind":"countdown","duration":"1000000000000s"}}', "invalid_spec"),
        ("duration \"99999999999999999999h\"", "cmd", b'{"action":"create","timer":"big","spec":{"kind":"countdown","duration":"99999999999999999999h"}}', "invalid_spec"),
        ("duration \"9223372036854775807ms\"", "cmd", b'{"action":"create","timer":"big","spec":{"kind":"countdown","duration":"9223372036854775807ms"}}', "invalid_spec"),
        ("adjust 1e308", "timer_cmd", b'{"action":"adjust","seconds":1e308}', "invalid_argument"),
        ("adjust -9223372036854775808", "timer_cmd", b'{"action":"adjust","seconds":-9223372036854775808}', "invalid_argument"),
        ("at 1e308", "timer_cmd", b'{"action":"pause","at":1e308}', None),
        ("if_revision 1e308", "timer_cmd", b'{"action":"pause","if_revision":1e308}', None),
        ("start_at -1e308", "cmd", b'{"action":"start","timer":"big","start_at":-1e308,"spec":{"kind":"countdown","duration":"1m"}}', None),
        ("10,000 exercises", "cmd", json.dumps({"action": "create", "timer": "big", "spec": {"kind": "interval", "work": "1s", "rounds": 8, "exercises": [f"e{i}" for i in range(10_000)]}}).encode(), None),
        ("10,000 program segments", "cmd", json.dumps({"action": "create", "timer": "big", "spec": {"kind": "program", "segments": [{"kind": "work", "duration": "1s"}] * 10_000}}).encode(), None),
        ("duplicate keys", "cmd", b'{"action":"time","action":"explode"}', "bad_json"),
        ("history limit 1e308", "cmd", b'{"action":"history","limit":1e308}', "invalid_argument"),
    ]:
        add(f"classic: {label}", kind, payload, "error" + (f":{expected}" if expected else ""), timer=HX if kind == "timer_cmd" else None, rid=None)

    # Retained commands: never replayed (the final restart checks that); live, they are answered.
    add("retained create (live)", "cmd", obj(("action", "create"), ("id", ID), ("timer", "rtd"), ("spec", spec_1h)), "any", retain=True)
    add("retained word pause on hx (live)", "timer_cmd", b"pause", "any", timer=HX, rid=None, retain=True)
    add("retained clock request (live)", "time", obj(("id", ID)), "any", retain=True)

    # ------------------------------------------------------------------------------------
    # Retained states, read back by the node's outbox check on a connect (scenario_hostile
    # holds timers st<k> with unpublished events so the node subscribes to their states).
    states = [
        ("empty", b""), ("{}", b"{}"), ("null", b"null"), ("revision 1e309", b'{"revision":1e309}'), ("revision -1e309", b'{"revision":-1e309}'),
        ("revision 2^63", b'{"revision":9223372036854775808}'), ("revision 1e19", b'{"revision":1e19}'), ("revision -1e300", b'{"revision":-1e300}'),
        ("revision NaN", b'{"revision":NaN}'), ("revision 1.5", b'{"revision":1.5}'), ("revision -1", b'{"revision":-1}'),
        ("revision \"5\"", b'{"revision":"5"}'), ("revision null", b'{"revision":null}'), ("revision []", b'{"revision":[1]}'),
        ("revision 2^31", b'{"revision":2147483648}'), ("revision 10^11", b'{"revision":99999999999}'),
        ("revision 2^53+1", b'{"revision":9007199254740993}'), ("revision 26 digits", b'{"revision":12345678901234567890123456}'),
        ("revision -0", b'{"revision":-0}'), ("revision 1e-400", b'{"revision":1e-400}'), ("duplicate revision", b'{"revision":1,"revision":999}'),
        ("100,000-deep array", b"[" * 100_000 + b"]" * 100_000), ("100,000-deep object", b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
        ("revision under 600-deep", b'{"revision":1,"x":' + b"[" * 600 + b"]" * 600 + b"}"), ("invalid UTF-8", b'{"revision":1,"x":"\xff"}'),
        ("1 MiB", b'{"revision":1,"x":"' + b"x" * (1 << 20) + b'"}'), ("16 MiB", b"s" * (16 << 20)), ("binary", bytes(range(256)) * 4),
        ("BOM + JSON", b'\xef\xbb\xbf{"revision":3}'), ("a word", b"running"), ("status only", b'{"status":"running","ends_at_ms":1e309}'),
        ("60,000 open brackets", b"[" * 60_000), ("trailing garbage", b'{"revision":1} x'),
    ]
    for i, (label, payload) in enumerate(states):
        add(f"state st{i}: {label}", "state", payload, "none", timer=f"st{i}", rid=None, retain=True)
    for label, tid, payload in [("keep: revision 1e309", "keep", b'{"revision":1e309}'), ("circuit: 1 MiB", "circuit", b"c" * (1 << 20)),
                                ("unknown timer: revision 2^63", "nosuch", b'{"revision":9223372036854775808}'),
                                ("invalid id KEEP: {}", "KEEP", b"{}"), ("id ..: 100,000-deep", "..", b"[" * 100_000 + b"]" * 100_000),
                                ("65-char id: empty", "a" * 65, b"")]:
        add(f"state {label}", "state", payload, "none", timer=tid, rid=None, retain=True)

    # ------------------------------------------------------------------------------------
    # Retained next classes on timers no schedule starts: the node reads them at every connect
    # and clears them (an empty retained payload), whatever they hold.
    nexts = [("empty", b""), ("{}", b"{}"), ("a class", b'{"timer":"nx","schedule":"gone","name":"Ghost","starts_at_ms":1}'),
             ("starts_at_ms 1e309", b'{"starts_at_ms":1e309}'), ("100,000-deep array", b"[" * 100_000 + b"]" * 100_000),
             ("invalid UTF-8", b'{"name":"\xff"}'), ("1 MiB", b"n" * (1 << 20)), ("binary", bytes(range(256)) * 4)]
    for i, (label, payload) in enumerate(nexts):
        add(f"next nx{i}: {label}", "next", payload, "none", timer=f"nx{i}", rid=None, retain=True)
    for label, tid, payload in [("timer hx (no schedule): a class", "hx", b'{"name":"Ghost"}'), ("id ..: {}", "..", b"{}"),
                                ("65-char id: a word", "a" * 65, b"next"), ("invalid id KEEP: {}", "KEEP", b"{}")]:
        add(f"next {label}", "next", payload, "none", timer=tid, rid=None, retain=True)
    return out


def obj_spec(spec):
    """A spec dict as JSON bytes (values may be Raw)."""
    if isinstance(spec, dict):
        return b"{" + b",".join(enc(k) + b":" + obj_spec(v) for k, v in spec.items()) + b"}"
    if isinstance(spec, list):
        return b"[" + b",".join(obj_spec(v) for v in spec) + b"]"
    return enc(spec)


FRESH_TIMER = re.compile(rb'"timer":"((?:okc|okd|oks|hs)\d+)"')


def with_round(case, rnd):
    """The case for round `rnd` (0 is the case itself): request ids `h<NNNNN>` become
    `i<NNNNN>`, `j<NNNNN>`, ... (a repeat within the dedup window would get the first reply),
    and the fresh timer ids a create may take get a suffix (`okc3` -> `okc3r1`)."""
    if rnd == 0:
        return case
    payload = FRESH_TIMER.sub(lambda m: b'"timer":"' + m.group(1) + b"r%d" % rnd + b'"', case.payload, count=1)
    if case.rid and case.rid.startswith("h") and len(case.rid) == 6 and case.rid[1:].isdigit():
        new = chr(ord("h") + rnd) + case.rid[1:]
        return case._replace(payload=payload.replace(b'"' + case.rid.encode() + b'"', b'"' + new.encode() + b'"', 1), rid=new)
    return case._replace(payload=payload)


# The largest packet the node accepts (NodeConfiguration.maximumPacketSize: 4 x the 64 KiB
# command limit, at least 2 MiB).
NODE_MAX_PACKET = 2 << 20


def cases(now_ms):
    """Every case, numbered: `"id":"h<NNNNN>"` is put in each JSON command that is still an object."""
    out = []
    for n, (name, kind, payload, expect, field, timer, retain, rid) in enumerate(_lines(now_ms)):
        marker = f"h{n:05d}"  # as long as ID
        if ID.encode() in payload:
            payload = payload.replace(ID.encode(), marker.encode(), 1)
            if rid == "auto" or rid == "@":
                rid = marker
        elif rid == "auto":
            # A JSON object without an id of its own: one is added in front.
            if payload[:1] == b"{" and kind in ("cmd", "timer_cmd", "time"):
                payload = b'{"id":"' + marker.encode() + b'",' + payload[1:] if payload != b"{}" else b'{"id":"' + marker.encode() + b'"}'
                rid = marker
            else:
                rid = None
        elif rid == "@":
            rid = marker
        if rid is None and kind in ("cmd", "timer_cmd", "time") and strict_json(payload):
            # An id of the payload's own (the node echoes it): the reply is matched by it.
            value = json.loads(payload)
            if isinstance(value, dict) and isinstance(value.get("id"), str):
                rid = value["id"]
        if kind in ("cmd", "timer_cmd", "time") and len(payload) > NODE_MAX_PACKET - 1024:
            # Over the node's MQTT 5 Maximum Packet Size: the broker drops it for the node,
            # which never reads it, so no reply (docs/SECURITY.md).
            expect, field, rid = "dropped", None, None
        out.append(Case(name, kind, payload, expect, field, timer, rid, retain))
    names = [c.name for c in out]
    dupes = {x for x in names if names.count(x) > 1}
    assert all(c.rid is None or isinstance(c.rid, str) for c in out)
    assert not dupes, f"duplicate case names: {sorted(dupes)[:5]}"
    return out


if __name__ == "__main__":
    import time
    all_cases = cases(time.time() * 1000)
    by_kind = collections.Counter(c.kind for c in all_cases)
    print(f"{len(all_cases)} cases: {dict(by_kind)}")
    print(f"expectations: {dict(collections.Counter(c.expect.split(':')[0] for c in all_cases))}")
    print(f"bytes in all: {sum(len(c.payload) for c in all_cases):,}")
