"""scripts/brokers: the broker matrix (docs/deployment.md, "Brokers: what works where"). Starts
each broker (or two-node cluster) of its own on 127.0.0.1, runs the core flows against a real
`pacer run` (node on the first member, displays on the last), prints one table, and stops
everything by PID.

  scripts/brokers [--brokers mosquitto,amqtt,amqtt-anon,rabbitmq,ejabberd] [--json FILE] [--markdown]

PACER_BIN (or --pacer-bin) is the binary. Exit status 1 when a flow Pacer needs fails on a
broker, unless the table's notes say that broker cannot do it (KNOWN below: each is measured
again every run, and a note says so when it starts working)."""
import argparse
import json
import os
import sys
import time

from . import brokers, flows

ALL = ["mosquitto", "amqtt", "amqtt-anon", "rabbitmq", "ejabberd"]
TITLES = {
    "mosquitto": "mosquitto 2.0",
    "amqtt": "amqtt 0.12 (user name)",
    "amqtt-anon": "amqtt 0.12 (anonymous)",
    "rabbitmq": "RabbitMQ 3.10 ×2",
    "ejabberd": "ejabberd 23.01 ×2",
}
# Required flows a broker is known not to do, with why (docs/deployment.md says what to do).
KNOWN = {
    ("amqtt-anon", "reconnect_cmd"): "amqtt drops an anonymous client's session when its connection ends",
    ("amqtt", "reconnect_cmd"): "amqtt 0.12 delivers a message queued for an offline session with the retain flag set, "
                                "and the node ignores retained commands; a resend with the same id goes through",
}


def table(results, kinds, markdown):
    rows = [("flow",) + tuple(TITLES[k] for k in kinds)]
    for key, title in flows.FLOWS:
        row = [title]
        for k in kinds:
            res = results[k]
            if "_error" in res:
                row.append("not run")
                continue
            ok, text = res.get(key, (False, "not reached"))
            if ok:
                row.append(text)
            elif key in flows.REQUIRED and (k, key) not in KNOWN:
                row.append("FAIL: " + text)
            else:
                row.append("no: " + text)
        rows.append(tuple(row))
    if markdown:
        out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return "\n".join(out)
    return "\n".join(r[0] + "\n" + "\n".join(f"    {TITLES[k]:24} {r[i + 1]}" for i, k in enumerate(kinds)) for r in rows[1:])


def main(argv=None):
    ap = argparse.ArgumentParser(prog="scripts/brokers", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", default=",".join(ALL))
    ap.add_argument("--pacer-bin", default=os.environ.get("PACER_BIN"))
    ap.add_argument("--json")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    if not args.pacer_bin or not os.access(args.pacer_bin, os.X_OK):
        print("brokers: set PACER_BIN (or --pacer-bin) to a built `pacer` binary", file=sys.stderr)
        return 2
    kinds = [k for k in args.brokers.split(",") if k]
    for k in kinds:
        if k not in ALL:
            print(f"brokers: unknown broker {k!r} (one of {', '.join(ALL)})", file=sys.stderr)
            return 2
    results, failed = {}, []
    for k in kinds:
        t0 = time.time()
        try:
            b = brokers.start(k)
        except Exception as e:  # noqa: BLE001 — said, and counted as a failure
            print(f"{k}: could not start: {e}", flush=True)
            results[k] = {"_error": str(e)}
            failed.append(f"{k}: not started")
            continue
        started = time.time() - t0
        try:
            results[k] = flows.run(b, args.pacer_bin, log=lambda s: print(s, flush=True))
        except Exception as e:  # noqa: BLE001
            results[k] = {"_error": repr(e)}
        finally:
            b.stop()
        res = results[k]
        if "_error" in res:
            failed.append(f"{k}: {res['_error']}")
            print(f"{k}: error: {res['_error']}", flush=True)
            continue
        bad = [key for key in flows.REQUIRED if not res.get(key, (False,))[0] and (k, key) not in KNOWN]
        fixed = [key for (kk, key) in KNOWN if kk == k and res.get(key, (False,))[0]]
        known = [key for (kk, key) in KNOWN if kk == k and not res.get(key, (False,))[0]]
        print(f"{k}: started in {started:.0f} s, flows in {time.time() - t0 - started:.0f} s"
              + (f"; FAILED: {', '.join(bad)}" if bad else "; every flow Pacer needs works"
                 + (f" but {', '.join(known)} (a known limit, below)" if known else ""))
              + (f"; now works although listed as known not to: {', '.join(fixed)}" if fixed else ""), flush=True)
        if bad:
            failed += [f"{k}: {key}" for key in bad]
            print(res.get("_node_log", ""), flush=True)
    print()
    print(table(results, kinds, args.markdown))
    notes = [f"- {TITLES[k]}: {why}" for (k, key), why in KNOWN.items() if k in kinds]
    if notes:
        print("\nknown limits (measured above):\n" + "\n".join(notes))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({k: {key: v for key, v in r.items() if key != "_node_log"} for k, r in results.items()}, f, indent=1)
    print(f"\n{len(kinds) - len({f.split(':')[0] for f in failed})} passed, {len({f.split(':')[0] for f in failed})} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
