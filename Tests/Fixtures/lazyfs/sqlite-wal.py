#!/usr/bin/env python3
"""SQLite in WAL mode on the lazy filesystem, for Tests/PacerNodeLiveTests/Durability/LazyFSTests.swift.

Uses the system SQLite (Python's sqlite3 module links Debian's libsqlite3, the library the
node links through GRDB) with the node's settings: journal_mode=WAL, synchronous=FULL,
journal_size_limit=4 MiB.

  sqlite-wal.py unsynced DB   rows 1-10 (FULL), a TRUNCATE checkpoint, rows 11-20 (FULL),
                              rows 21-30 with synchronous=OFF (committed, never fsynced),
                              then SIGKILL itself: no clean close, no checkpoint
  sqlite-wal.py writer DB     one row per transaction (FULL), forever, printing each row's
                              number once its COMMIT has returned (acknowledged); a checkpoint
                              every 100 WAL pages (wal_autocheckpoint) and a TRUNCATE one
                              every 40 rows, so cuts strike checkpoints too
  sqlite-wal.py check DB      opens it read-write (WAL recovery) and prints one JSON line:
                              integrity_check, row count, max, whether rows are 1..max
                              (no table yet: 0 rows)
"""
import json
import os
import signal
import sqlite3
import sys


def connect(path):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA journal_size_limit=4194304")
    db.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER PRIMARY KEY, payload BLOB)")
    return db


def insert(db, n):
    # About 1 KiB a row: several rows per page, a page or two per transaction.
    db.execute("BEGIN")
    db.execute("INSERT INTO t VALUES (?, ?)", (n, os.urandom(1000)))
    db.execute("COMMIT")


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "unsynced":
        db = connect(path)
        for n in range(1, 11):
            insert(db, n)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for n in range(11, 21):
            insert(db, n)
        db.execute("PRAGMA synchronous=OFF")
        for n in range(21, 31):
            insert(db, n)
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "writer":
        db = connect(path)
        db.execute("PRAGMA wal_autocheckpoint=100")
        n = db.execute("SELECT COALESCE(MAX(n), 0) FROM t").fetchone()[0]
        while True:
            n += 1
            insert(db, n)
            print(n, flush=True)
            if n % 40 == 0:
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    elif mode == "check":
        db = sqlite3.connect(path, isolation_level=None)
        integrity = [row[0] for row in db.execute("PRAGMA integrity_check")]
        # A writer killed before its first commit leaves no table: no row was acknowledged.
        if db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 't'").fetchone()[0] == 0:
            count, top = 0, 0
        else:
            count, top = db.execute("SELECT COUNT(*), COALESCE(MAX(n), 0) FROM t").fetchone()
        print(json.dumps({"integrity": integrity, "count": count, "max": top, "contiguous": count == top}))
        db.close()
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
