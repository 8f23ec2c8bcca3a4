"""Pacer's fault suite (docs/RELIABILITY.md), run by scripts/reliability, which puts
Tests/harness/ on sys.path and calls reliability.main.main(). Python 3 standard library only; the
hostile payloads come from hostile_payloads.py beside these modules. The modules:

- main: the command line, the table of scenarios, the run and its JSON report;
- suite: the bookkeeping of a run (checks, known issues, figures);
- common: ROOT, the wall clock in ms, the lowest CPU priority, JSON readers, summary;
- mqtt: the small MQTT 3.1.1 client;
- processes: free ports, /proc readings, mosquitto (Broker), a forwarder (Gate), `pacer run` (Node);
- session: commands and replies on a node's topics, and the lateness of its flips;
- wire: the storm's loopback capture and broker-backlog sampler;
- broker_faults (restart, absent, refused), acl (acl, aclnode), kill, clock, stuck, disk,
  hostile (with hostile_run and hostile_retained), storm (storm, stormlimit): the scenarios.
"""
