#!/usr/bin/env python3
"""landed_events.py SOURCE_DIR: what a source's landing holds, one line per landed coordinate
(of every partition, in offset order; the tests that use it land one partition):

    offset TAB status TAB detail

where detail is, JSON-escaped, the bytes of the normalised event exactly as landed (accepted and
duplicate_event_id lines: the value of "event", cut from the line) or the validation_error
(quarantined lines).  Used by test/t/39_contract_golden.sh."""
import json, sys, glob, os
rows = {}
for path in glob.glob(os.path.join(sys.argv[1], "topic=*", "partition=*", "batch=*", "*.jsonl")):
    name = os.path.basename(path)
    with open(path, "rb") as f:
        for line in f.read().split(b"\n"):
            if not line:
                continue
            obj = json.loads(line)
            off = obj["kafka"]["offset"]
            if name == "quarantine.jsonl":
                rows[off] = ("quarantined", json.dumps(obj["validation_error"]))
            else:
                head = line.index(b'"event": ') + len(b'"event": ')
                tail = line.rindex(b', "kafka": {')
                status = "accepted" if name == "accepted.jsonl" else "duplicate_event_id"
                rows[off] = (status, json.dumps(line[head:tail].decode("utf-8")))
for off in sorted(rows):
    print("%d\t%s\t%s" % (off, rows[off][0], rows[off][1]))
