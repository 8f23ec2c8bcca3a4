"""The disk scenario (root only): the data directory's file system fills up mid-run (a 4 MiB
tmpfs), then space returns; then it turns read-only mid-run as an SD card does after an I/O
error (an ext4 image on a loop device, errors=remount-ro, the kernel's trigger_fs_error), and
the operator recovers it (stop, umount, e2fsck -fy, mount, start). Nothing acknowledged is lost,
nothing refused appears, the node keeps its flips on time and answers storage_failure."""
import json
import os
import shutil
import subprocess
import time

from .common import now_ms, summary
from .mqtt import connect_retrying
from .processes import Broker, Node, proc_rss_kb
from .session import Session, flip_lateness, skipped_flips


def scenario_disk(suite):
    suite.say("disk: the data directory's file system fills up mid-run, then space returns")
    if os.geteuid() != 0:
        suite.say("  SKIPPED: mounting a size-limited tmpfs needs root")
        suite.figures["disk"] = "skipped (not root)"
        return
    d = suite.dir("disk")
    mnt = os.path.join(d, "mnt")
    os.makedirs(mnt, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt], capture_output=True, text=True)
    if r.returncode != 0:
        suite.say(f"  SKIPPED: mount -t tmpfs failed: {r.stderr.strip()}")
        suite.figures["disk"] = f"skipped (mount failed: {r.stderr.strip()})"
        return
    broker = Broker(os.path.join(d, "broker"), persistence=False)
    broker.start()
    node = Node(suite.pacer, os.path.join(d, "node"), broker.port, "timers: []\n", args=[])
    node.data = os.path.join(mnt, "data")
    node.start()
    s = Session(node, broker.port)
    acked, failures, other = [], 0, []
    try:
        s.wait_online()
        spec = {"kind": "countdown", "duration": "1h"}
        for k in range(5):
            r = s.send({"action": "create", "timer": f"before{k}", "spec": spec})
            if r.get("ok"):
                acked.append(f"before{k}")
        filler = os.path.join(mnt, "filler")
        with open(filler, "wb", buffering=0) as f:
            for chunk in (65536, 4096, 512, 1):
                try:
                    while True:
                        f.write(b"\0" * chunk)
                except OSError:
                    pass
        full_codes = []
        for k in range(20):
            r = s.send({"action": "create", "timer": f"full{k}", "spec": spec})
            if r.get("ok"):
                acked.append(f"full{k}")
            else:
                full_codes.append(r["error"]["code"])
        failures = full_codes.count("storage_failure")
        other = [c for c in full_codes if c != "storage_failure"]
        alive_when_full = node.alive()
        os.remove(filler)
        time.sleep(0.5)
        recovered = []
        for k in range(5):
            r = s.send({"action": "create", "timer": f"after{k}", "spec": spec})
            recovered.append(bool(r.get("ok")))
            if r.get("ok"):
                acked.append(f"after{k}")
        node.stop()
        s.close()
        node.start()
        s = Session(node, broker.port)
        s.wait_online(timeout=30)
        listed = {t["id"] for t in s.send({"action": "list"}).get("timers", [])}
        lost = [t for t in acked if t not in listed]
        ghosts = [t for t in listed if t.startswith("full") and t not in acked]
        fig = {"tmpfs_size": "4m", "acknowledged": len(acked), "storage_failure_replies_while_full": failures,
               "other_errors_while_full": other, "node_alive_while_full": alive_when_full,
               "commands_ok_after_space_returned": sum(recovered), "acknowledged_lost_after_restart": lost,
               "refused_but_present_after_restart": ghosts}
        suite.figures["disk"] = fig
        suite.say(f"  {json.dumps(fig)}")
        suite.check("disk", failures > 0, "no storage_failure while the disk was full")
        suite.check("disk", not other, f"other errors while full: {other}")
        suite.check("disk", all(recovered), "commands still failed after space returned")
        suite.check("disk", not lost and not ghosts, f"lost {lost}, ghosts {ghosts}")
    finally:
        s.close()
        node.stop()
        broker.stop()
        subprocess.run(["umount", "-l", mnt])
    _disk_read_only(suite, d)


def _disk_read_only(suite, d):
    """The data directory's ext4 file system turns read-only mid-run, as a Pi's SD card does
    after an I/O error: an ext4 image on a loop device mounted with errors=remount-ro, and the
    kernel's trigger_fs_error. Then the operator's recovery: stop, umount, e2fsck -fy, mount, start."""
    suite.say("disk (read-only): ext4 on a loop device, errors=remount-ro, trigger_fs_error mid-run; then stop, e2fsck, mount, start")
    missing = [t for t in ("mkfs.ext4", "e2fsck", "findmnt") if not shutil.which(t)]
    if missing:
        suite.say(f"  SKIPPED: {missing} not installed (e2fsprogs, util-linux: scripts/test installs them)")
        suite.figures["disk_read_only"] = f"skipped ({missing} not installed)"
        return
    img, mnt = os.path.join(d, "ext4.img"), os.path.join(d, "ro-mnt")
    os.makedirs(mnt, exist_ok=True)
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True, capture_output=True)

    def mount():
        return subprocess.run(["mount", "-o", "loop,errors=remount-ro", img, mnt], capture_output=True, text=True)

    def options():
        return subprocess.run(["findmnt", "-n", "-o", "OPTIONS", mnt], capture_output=True, text=True).stdout.strip()

    r = mount()
    if r.returncode != 0:
        suite.say(f"  SKIPPED: mount -o loop failed (no loop devices here?): {r.stderr.strip()}")
        suite.figures["disk_read_only"] = f"skipped (mount -o loop failed: {r.stderr.strip()})"
        return
    device = subprocess.run(["findmnt", "-n", "-o", "SOURCE", mnt], capture_output=True, text=True).stdout.strip()
    trigger = f"/sys/fs/ext4/{os.path.basename(device)}/trigger_fs_error"
    if not os.path.exists(trigger):
        subprocess.run(["umount", mnt])
        suite.say(f"  SKIPPED: the kernel has no {trigger}")
        suite.figures["disk_read_only"] = f"skipped (no {trigger})"
        return
    broker = Broker(os.path.join(d, "ro-broker"), persistence=False)
    broker.start()
    node = Node(suite.pacer, os.path.join(d, "ro-node"), broker.port,
                "timers:\n  - {id: beat, spec: {kind: countdown, duration: 2h}}\n")
    node.data = os.path.join(mnt, "data")
    node.start()
    s = Session(node, broker.port)
    mounted = True
    acked, refused, ro_codes, fig = [], [], [], {}
    try:
        s.wait_online()
        beat = connect_retrying(broker.port, "rel-ro-beat")
        beat.subscribe(node.topic("timers", "beat", "#"))
        spec = {"kind": "countdown", "duration": "1h"}
        s.send({"action": "start"}, timer="beat")
        for k in range(5):
            if s.send({"action": "create", "timer": f"rw{k}", "spec": spec}).get("ok"):
                acked.append(f"rw{k}")
        r = s.send({"action": "adjust", "seconds": -60}, timer="beat")
        beat_revision = r.get("revision") if r.get("ok") else None
        with open(trigger, "w") as f:
            f.write("1")
        opts = options()
        t_ro = now_ms()
        ro_ms = []
        for k in range(10):
            t0 = time.monotonic()
            r = s.send({"action": "create", "timer": f"ro{k}", "spec": spec})
            ro_ms.append((time.monotonic() - t0) * 1000)
            if r.get("ok"):
                acked.append(f"ro{k}")
            else:
                refused.append(f"ro{k}")
            ro_codes.append("ok" if r.get("ok") else r["error"]["code"])
            r = s.send({"action": "adjust", "seconds": -1}, timer="beat")
            ro_codes.append("ok" if r.get("ok") else r["error"]["code"])
            if r.get("ok"):
                beat_revision = r.get("revision")
            time.sleep(0.3)
        listed_ro = {t["id"] for t in s.send({"action": "list"}).get("timers", [])}
        time.sleep(max(0, 3.2 - (now_ms() - t_ro) / 1000))
        t_end = now_ms()
        late = flip_lateness(beat.since(0), node, "beat", after_ms=t_ro, before_ms=t_end)
        skipped = skipped_flips(beat.since(0), node, "beat", after_ms=t_ro, before_ms=t_end)
        alive = node.alive()
        rss = proc_rss_kb(node.pid)
        t0 = time.monotonic()
        exit_code = node.stop(timeout=20)
        stop_ms = (time.monotonic() - t0) * 1000
        s.close()
        beat.close()
        subprocess.run(["umount", mnt], check=True)
        mounted = False
        fsck = subprocess.run(["e2fsck", "-fy", img], capture_output=True, text=True)
        r = mount()
        mounted = r.returncode == 0
        node.start()
        s = Session(node, broker.port)
        s.wait_online(timeout=30)
        listed = {t["id"]: t for t in s.send({"action": "list"}).get("timers", [])}
        lost = [t for t in acked if t not in listed]
        ghosts = [t for t in refused if t in listed]
        beat_after = listed.get("beat", {})
        after = s.send({"action": "create", "timer": "after", "spec": spec})
        codes = sorted(set(ro_codes))
        fig = {"image": "32 MiB ext4, errors=remount-ro", "mount_options_after_trigger": opts,
               "replies_while_read_only": {c: ro_codes.count(c) for c in codes},
               "reply_ms_while_read_only": summary(ro_ms), "list_answered_while_read_only": bool(listed_ro),
               "node_alive_while_read_only": alive, "node_rss_kb_while_read_only": rss,
               "flip_lateness_while_read_only_ms": summary(late),
               "flips_never_published_while_read_only": skipped,
               "sigterm_exit_code": exit_code, "sigterm_exit_ms": round(stop_ms),
               "e2fsck_exit_code": fsck.returncode, "remounted_rw": mounted,
               "acknowledged": len(acked), "acknowledged_lost_after_recovery": lost,
               "refused_but_present_after_recovery": ghosts,
               "beat_revision_acknowledged": beat_revision, "beat_revision_after_recovery": beat_after.get("revision"),
               "beat_status_after_recovery": beat_after.get("status"),
               "command_ok_after_recovery": bool(after.get("ok"))}
        suite.figures["disk_read_only"] = fig
        suite.say(f"  {json.dumps(fig)}")
        suite.check("disk", "ro" in opts.split(",") or "emergency_ro" in opts, f"the file system did not turn read-only: {opts}")
        suite.check("disk", ro_codes and all(c == "storage_failure" for c in ro_codes), f"replies while read-only: {ro_codes}")
        suite.check("disk", alive, "the node stopped while its file system was read-only")
        suite.check("disk", late and max(late) < 250 and not skipped, f"flips while read-only: {summary(late)}, {skipped} never published")
        suite.check("disk", exit_code == 0, f"SIGTERM while read-only: exit {exit_code}")
        suite.check("disk", fsck.returncode < 4, f"e2fsck -fy left errors (exit {fsck.returncode}): {fsck.stdout[-300:]}")
        suite.check("disk", not lost and not ghosts, f"after recovery: lost {lost}, refused but present {ghosts}")
        suite.check("disk", beat_after.get("revision") == beat_revision and beat_after.get("status") == "running",
                    f"the running timer after recovery: {beat_after.get('status')} revision {beat_after.get('revision')}, acknowledged {beat_revision}")
        suite.check("disk", after.get("ok"), f"a command after recovery: {after}")
    finally:
        s.close()
        node.stop()
        broker.stop()
        if mounted:
            subprocess.run(["umount", "-l", mnt])
