#!/usr/bin/python3
"""test/lib/seed_rules.py -- the seed pipeline's rules as Python's own standard library
applies them, and a corpus of edge cases to check kafka_lake against them record by record.

The seed (the Python 3.11 pipeline kafka_lake reimplements) judges a Kafka record value with
json.loads, str.strip, str.lower, date.fromisoformat and datetime.fromisoformat (after
replacing every "Z" with "+00:00"; a zone is required), writes the canonical CSV of a date with
csv.writer(lineterminator="\\n") and computes gold with round(defects / units, 6) and
round(cycle_sum / events, 2).  The functions below are written from those rules; they call the
standard library for every decision that matters (nothing here re-implements lower-casing,
whitespace, ISO dates or rounding), so the expectations are Python's own.

kafka_lake keeps some stricter rules on purpose (docs/contracts.md, "The contract and the seed's
pipeline").  kl_judge() applies each of them by name on top of the seed's verdict, so a record
is expected accepted exactly when the seed accepts it and no documented difference applies,
and the check reports how many records each difference decided.

Commands (the shell test test/t/38_seed_corpus.sh drives them):
  corpus DIR                  DIR/p<N>.kv: one "key<TAB>value" line per record of partition N
                              (for kcat -P -K '\\t' -l), DIR/corpus.json: the records
  statuses DIR LANDING        every record's status equals the expectation
  events DIR LANDING          every accepted record's landed event is, byte for byte, the
                              event the seed normalises
  instants DIR FILE           FILE (partition, offset, epoch microseconds of event_time as the
                              foreign table reads it) equals Python's datetime
  csv DIR LANDING DATE FILE   FILE (the adapter's events.csv) is the seed's canonical CSV of DATE
  gold DIR LANDING DATE FILE  FILE (gold rows: plant, line, product, units, defects,
                              defect_rate, avg_cycle_time_ms) is the seed's gold of DATE
Each check prints what differs (the first few records) and exits 1 when anything does.
"""

import csv
import ctypes
import glob
import hashlib
import io
import json
import os
import random
import re
import sys
from datetime import date, datetime, timedelta, timezone

if sys.version_info[:2] != (3, 11):
    sys.exit("seed_rules.py: needs Python 3.11, the seed's language (this is %d.%d)"
             % sys.version_info[:2])

FIELDS = ("event_id", "schema_version", "event_time", "business_date", "plant_id", "line_id",
          "work_order_id", "machine_id", "product_code", "operation", "units_produced",
          "defect_count", "cycle_time_ms")
STRINGS = ("event_id", "event_time", "business_date", "plant_id", "line_id", "work_order_id",
           "machine_id", "product_code", "operation")
IDENTIFIERS = ("plant_id", "line_id", "work_order_id", "machine_id", "product_code", "operation")
INTEGERS = ("schema_version", "units_produced", "defect_count", "cycle_time_ms")
OPERATIONS = {"assembly", "inspection", "packaging", "welding", "machining", "calibration"}
CSV_COLUMNS = ("event_time", "plant_id", "line_id", "work_order_id", "machine_id", "product_code",
               "operation", "units_produced", "defect_count", "cycle_time_ms", "business_date",
               "event_id", "schema_version", "kafka_topic", "kafka_partition", "kafka_offset",
               "kafka_key", "kafka_timestamp_ms", "kafka_record_fingerprint")
TOPIC = "kafka_lake.seed.corpus.v1"
PARTITIONS = 12
MAX_VALUE_BYTES = 65536
UTC0 = datetime(1970, 1, 1, tzinfo=timezone.utc)


# ---------------------------------------------------------------- the seed's rules

def seed_event_time(text):
    """The seed's event_time rule: the datetime, or None when refused."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def seed_normalise(event):
    """The seed's contract on a decoded JSON value: the normalised event, or None."""
    if not isinstance(event, dict) or set(event) != set(FIELDS):
        return None
    out = dict(event)
    for f in STRINGS:
        if not isinstance(out[f], str) or not out[f].strip():
            return None
        out[f] = out[f].strip()
    for f in INTEGERS:
        if isinstance(out[f], bool) or not isinstance(out[f], int):
            return None
    if out["schema_version"] != 1:
        return None
    try:
        date.fromisoformat(out["business_date"])
    except ValueError:
        return None
    if seed_event_time(out["event_time"]) is None:
        return None
    for f in IDENTIFIERS:
        out[f] = out[f].lower()
    if out["operation"] not in OPERATIONS:
        return None
    if out["units_produced"] < 0 or out["defect_count"] < 0 or \
            out["defect_count"] > out["units_produced"] or out["cycle_time_ms"] <= 0:
        return None
    return out


def seed_judge(value):
    """The seed's landing of one value: the normalised event, or None (quarantined)."""
    try:
        return seed_normalise(json.loads(value.decode("utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


# ---------------------------------------------------------------- kafka_lake's differences

def _strings_of(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings_of(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings_of(v)


def kl_differences(value, normalised):
    """The documented reasons for which kafka_lake refuses a value the seed accepts."""
    reasons = []
    if len(value) > MAX_VALUE_BYTES:
        reasons.append("value over 64 KiB")
    pairs = json.loads(value.decode("utf-8"), object_pairs_hook=lambda p: p)
    names = [k for k, _ in pairs]
    if len(names) != len(set(names)):
        reasons.append("duplicate field name")
    raw = dict(pairs)
    if any(not -2**63 <= raw[f] < 2**63 for f in INTEGERS):
        reasons.append("integer beyond int64")
    if any("\0" in raw[f] for f in STRINGS):
        reasons.append("NUL character")
    doc = json.loads(value.decode("utf-8"))
    if any(0xD800 <= ord(c) <= 0xDFFF for s in _strings_of(doc) for c in s):
        reasons.append("unpaired surrogate")
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", normalised["business_date"]):
        reasons.append("business_date not YYYY-MM-DD")
    offset = seed_event_time(normalised["event_time"]).utcoffset()
    if abs(offset) >= timedelta(hours=16):
        reasons.append("UTC offset beyond 15:59:59")
    return reasons


def kl_judge(value):
    """(expected kafka_lake status before duplicates, normalised event, reasons)."""
    normalised = seed_judge(value)
    if normalised is None:
        return "quarantined", None, []
    reasons = kl_differences(value, normalised)
    return ("quarantined" if reasons else "accepted"), normalised, reasons


def seed_instant_usec(text):
    """event_time as microseconds since the epoch, as Python's datetime has it."""
    return (seed_event_time(text) - UTC0) // timedelta(microseconds=1)


def fingerprint(partition, offset, key, value):
    h = hashlib.sha256()
    h.update(TOPIC.encode() + b"\0" + str(partition).encode() + b"\0" + str(offset).encode()
             + b"\0" + (key or "").encode() + b"\0" + value)
    return h.hexdigest()


# ---------------------------------------------------------------- the corpus

BASE = {"event_id": None, "schema_version": 1, "event_time": "2026-07-03T08:00:00+09:00",
        "business_date": "2026-07-03", "plant_id": "plant-01", "line_id": "line-01",
        "work_order_id": None, "machine_id": "machine-01", "product_code": "prd-a",
        "operation": "assembly", "units_produced": 10, "defect_count": 1, "cycle_time_ms": 1200}


class Corpus:
    def __init__(self):
        self.records = []
        self.n = 0

    def add(self, partition, category, value, note=""):
        if isinstance(value, str):
            value = value.encode("utf-8")
        self.records.append({"partition": partition, "category": category, "note": note,
                             "key": "k%d" % len(self.records), "value": value})

    def event(self, partition, category, note="", ascii=None, **fields):
        """A JSON event: BASE with fields replaced (None drops a field)."""
        self.n += 1
        ev = dict(BASE, event_id="evt-%d" % self.n, work_order_id="wo-%d" % self.n)
        ev.update(fields)
        ev = {k: v for k, v in ev.items() if v is not None}
        if ascii is None:
            ascii = self.n % 2 == 0
        self.add(partition, category, json.dumps(ev, ensure_ascii=ascii), note)


def icu():
    """ICU's own property functions (the library kafka_lake links), to pick candidates."""
    path = sorted(glob.glob("/usr/lib/*/libicuuc.so.[0-9]*") + glob.glob("/usr/lib/libicuuc.so.[0-9]*"))
    if not path:
        sys.exit("seed_rules.py: libicuuc not found")
    major = re.search(r"\.so\.(\d+)", path[0]).group(1)
    lib = ctypes.CDLL(path[0])
    fn = lambda name: getattr(lib, "%s_%s" % (name, major))
    return fn("u_charType"), fn("u_charDirection"), fn("u_hasBinaryProperty")


def scalar_values():
    return (c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


def names_part(c):
    """Field names written with JSON escapes; duplicates and unknown names so written."""
    body = {k: v for k, v in dict(BASE, event_id="x", work_order_id="wo-names").items()}
    for i, f in enumerate(FIELDS):
        for spelling in ("lower", "upper", "first", "all"):
            if spelling == "all":
                name = "".join("\\u%04x" % ord(ch) for ch in f)
            else:
                pos = {"lower": len(f) // 2, "upper": len(f) - 1, "first": 0}[spelling]
                esc = ("\\u%04X" if spelling == "upper" else "\\u%04x") % ord(f[pos])
                name = f[:pos] + esc + f[pos + 1:]
            members = []
            for g in FIELDS:
                v = body[g] if g != "event_id" else "evt-name-%s-%s" % (f, spelling)
                members.append('"%s": %s' % (name if g == f else g, json.dumps(v)))
            c.add(0, "escaped names", "{" + ", ".join(members) + "}", "%s %s" % (f, spelling))
    members = ['"%s": %s' % (g, json.dumps(body[g] if g != "event_id" else "evt-name-dup"))
               for g in FIELDS]
    c.add(0, "escaped names", "{" + ", ".join(members) + ', "event\\u005fid": "evt-name-dup-2"}',
          "a duplicate of event_id written with an escape")
    c.add(0, "escaped names", "{" + ", ".join(members).replace('"line_id"', '"line\\u005Fid"')
          .replace('"plant_id"', '"line\\u005fid"') + "}", "two escaped spellings of one name")
    c.add(0, "escaped names", "{" + ", ".join(members) + ', "colou\\u0072": "red"}',
          "an unknown name written with an escape")
    c.add(0, "escaped names", "{" + ", ".join(members).replace('"operation"', '"operation\\u0000"')
          + "}", "a name with an escaped NUL")
    c.add(0, "escaped names", "{" + ", ".join(members).replace('"machine_id"', '"machine\\/id"')
          + "}", "an escaped solidus makes another name")


SCRIPTS = [
    "PLÄNT-A", "Überwerk", "ÅNGSTRÖM", "\u212bngstr\u00f6m", "STRASSE", "STRA\u1e9eE", "İSTANBUL",
    "ISTANBUL", "ıİiI", "\u01c4\u01c5\u01c6\u01f1\u01f2", "ΟΔΟΣ", "ΟΔΟΣ ΣΑ", "Σ", "ΑΣ", "ΑΣ.",
    "Α.Σ", "ΑΣΑ", "Α'Σ'", "ΑΣ\u0301", "\u0301Σ", "ΣΑ", "ΑΣ1", "ΑΣ-Β", "Α\u00adΣ", "ΑΣ\u00ad",
    "Α\u0345Σ", "\u1ffc\u1f88\u1fbc", "ΆΈΉΊΌΎΏ", "МОСКВА-ЗАВОД", "ԱՐԱՐԱՏ", "\u10a0\u10a1\u10c7",
    "\u1c90\u1c91\u1cbf", "\u13a0\u13a1\u13f5", "\U00010400\U00010401", "\U0001e900\U0001e921",
    "\U00010c80", "\U000104b0", "\U00010570\U00010595", "\u2c00\u2c2f", "\u2c80\u2ce2",
    "ＰＬＡＮＴ－Ａ", "\u216b\u2163", "\u24b6\u24cf", "日本工場", "مصنع-A", "מפעל-B", "🏭-PLANT",
    "\u212a-K", "\ufb00\ufb01", "\u0149", "\ua7b4\ua7aa\ua7c5\ua7d0", "\u13f8\uab70",
    "\u0130\u0307", "Α\U00011f00Σ", "Α\u0eceΣ", "Α\U0001df25Σ", "\U0001df25Σ", "ΑΣ\U00011f00",
    "\u0041\u030a", "\u1e9e\u00df", "\u0345", "\u03d0\u03f4\u03f9", "\u2126\u212a\u212b",
    "\U0001d400\U0001d434", "\u0e01\u0e33", "\uff21\uff3a\uff41", "ǅungla", "Ⅷ-line",
]

LOOKALIKES = [0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x180E, 0x00AD, 0x034F, 0x115F, 0x1160,
              0x3164, 0xFFA0, 0x2800, 0x0000 + 0x7F, 0x061C, 0x200E, 0x200F]


def identifiers_part(c, char_type, char_direction):
    for i, s in enumerate(SCRIPTS):
        c.event(0, "scripts", s, plant_id=s, line_id=s + "-line", event_id="evt-s-%d-%s" % (i, s))
        c.event(0, "scripts", s, product_code=" %s\u00a0" % s, machine_id=s.swapcase())
    spaces = sorted({cp for cp in scalar_values()
                     if chr(cp).isspace() or char_type(cp) == 12 or char_direction(cp) in (7, 8, 9)}
                    | set(LOOKALIKES))
    for cp in spaces:
        ch = chr(cp)
        c.event(0, "whitespace", "U+%04X around identifiers" % cp,
                event_id=ch + "evt-ws-%04x" % cp + ch, plant_id=ch + "Plant" + ch,
                line_id=ch * 3 + "L" + ch, work_order_id=ch + "wo-ws-%04x" % cp,
                machine_id="M" + ch + "1" + ch, operation=ch + "Assembly" + ch)
        c.event(0, "whitespace", "U+%04X around the dates" % cp,
                event_time=ch + "2026-07-03T08:00:00Z" + ch, business_date=ch + "2026-07-03" + ch)
        c.event(0, "whitespace", "U+%04X alone" % cp, line_id=ch, product_code=ch + ch)
    for op in ("ASSEMBLY", "Packaging\u00a0", "pac\u212aaging", "\u3000welding", "ＡＳＳＥＭＢＬＹ",
               "İnspection", "calibratıon", "MACHİNING", "machining\u200b", "Calibration\u2029"):
        c.event(0, "operations", op, operation=op)
    # the same event_id after trimming: the second is a duplicate, in both
    c.event(0, "duplicates", "first", event_id="evt-dup-1")
    c.event(0, "duplicates", "trimmed to the same", event_id="\u00a0evt-dup-1\u2003")
    c.event(0, "duplicates", "lower case is another id", event_id="EVT-DUP-1")


TIMESTAMPS = [
    "2026-07-03T08:00:00Z", "2026-07-03T08:00:00z", "2026-07-03T08+09:00", "20260703T080000Z",
    "2026-07-03T08:00:00+09:00:30", "2026-07-03T08:00:00,5Z", "2026-W27-5T08:00Z",
    "2026W275T0800Z", "2026-W27T08:00Z", "2026W27T08Z", "2026-185T08:00Z", "2026185T08Z",
    "2026-07-03T08:00:00.+09:00", "2026-07-03T08:00:00.123456abc+09:00",
    "2026-07-03T08:00:00:123+09:00", "2026-07-03T24:00:00Z", "2026-07-03T08:00:00+09:75",
    "2026-07-03T08:00:00+15:59:59", "2026-07-03T08:00:00-15:59:59.999999",
    "2026-07-03T08:00:00+16:00", "2026-07-03T08:00:00-16:00", "2026-07-03T08:00:00+23:59:59.999999",
    "2026-07-03T08:00:00+24:00", "2026-07-03\u00e908:00Z", "2026-07-03 08:00Z",
    "2026-07-03\u300008:00Z", "2026-07-03\u000108:00Z", "2026-07-03\r08:00Z", "2026-07-03\n08:00Z",
    "2026-07-03,08:00Z", "2026-07-03\"08:00Z", "2026-07-03T08:00:00.1234567Z",
    "2026-07-03T08:00:00.Z", "2026-07-03T08Z", "2026-07-03T8Z", "2026-07-03T08:0Z",
    "2026-07-03T0800Z", "2026-07-03T08:00:60Z", "2026-07-03T08:00:00-00:00", "2026-07-03T08:00:00+00",
    "2026-07-03", "2026-07-03T", "0001-01-01T00:00+15:00", "0001-01-01T00:00-15:59",
    "9999-12-31T23:59:59-15:00", "9999-12-31T23:59:59.999999+15:59",
    "2026-07-03T08:00:00.123Z", "2026-07-03T08:00:00,Z", "2026-07-03T08:00:00.12a3Z",
    "2026-07-03T08:00:00+0900", "2026-07-03T08:00:00+090030", "2026-07-03T08:00:00+09:0030",
    "2026-07-03T08:00:00+09:00:30.123", "2026-07-03T08:00:00+0900.5", "2026-07-03T08:00:00+09.5",
    "2026-W53-1T08Z", "2026-W00-1T08Z", "2026-W27-8T08Z", "2026-W27-0T08Z", "2020-W53-7T00Z",
    "2015-W53-5T00Z", "2021-W53-1T00Z", "9999-W52-5T00Z", "9999-W52-6T00Z", "0001-W01-1T00Z",
    "0000-W52-7T00Z", "2026-07-03T08:00:00.000000001Z", "2026-07-03T08:00:00.9999999Z",
    "2026-07-03T23:59:59.9999995Z", "2026-07-03T08:00:00.1234565Z",
    "\uff12026-07-03T08Z", "2026-07-03T08:00:00+09:00 ", "2026-07-03T08:00:00ZZ",
    "2026-07-03T08:00:00Z+09:00", "2026-07-03t08:00Z", "2026-07-03T08:00:00-09",
    "2026-07-03T08:00:00+9", "2026-07-0308:00Z", "2026-07-03T08:00:00.5+09", "20260703T08Z",
    "2026-0703T08Z", "202607-03T08Z", "2026-07-03T08:00:00+09:00:60",
    "2026-07-03T08:00:00+00:00:00.000001", "2026-07-03T08:00:00-00:00:00.5",
    "2026-07-03T08:00:00-09:00:00.5", "2026-07-03T08:00:00-00:00:01.5", "2026-07-03T08:+09:00",
    "2026-07-03T08.+09:00", "2026-07-03T080000123+09:00", "2026-07-03T08:00:00:+09:00",
    "2026-07-03T08:00:+09:00", "2026-07-03T0800:00+09:00", "2026-07-03T08:0000+09:00",
    "2026-07-03T08,5+09:00", "2026-07-03T08:30,5+09:00", "2026-W27-0800+09:00",
    "2026W2750800+09:00", "2026-07-03T08:00:00+09:", "2026-07-03T08:00:00+09.",
    "2026-07-03T08:00:00+09:00:", "2026-07-03T08:00:00+09:00.5", "2026-02-29T08Z",
    "2028-02-29T08Z", "2100-02-29T08Z", "2000-02-29T08Z", "2026-13-01T08Z", "2026-00-01T08Z",
    "2026-07-32T08Z", "2026-07-00T08Z", "2026-07-03T08:00:00.1234567890123456789012345Z",
    "2026-07-03T08:00:00+09:00:30.1234567", "2026-07-03TZ", "2026-07-03T+09:00",
    "2026-07-03T08:00:00+-09:00", "2026-07-03T08:00:00\u221209:00", "2026-07-03T08:00:00 Z",
    "2026-07-03T08:00:00UTC", "2026-07-03T08:00:00+09:00[Asia/Seoul]", "2026\u201007\u201003T08Z",
    "\u0662\u0660\u0662\u0666-07-03T08Z", "2026-07-03T\u0660\u0668Z", "2026-W27-5", "2026W275",
    "2026-W27", "2026W27", "20260703", "2026-07", "2026-07-03T08:00:00.000000+00:00",
    "2026-07-03T08:00:00+00:00:00", "2026-07-03T08:00:00-00", "2026-07-03T08:00:00+0000",
    "2026-07-03T08:00:00+00:00Z", "Z2026-07-03T08:00:00", "2026-07-03T08:00Z:00",
    "2026-07-03T08:00:00.5Z ", " 2026-07-03T08:00:00.5Z", "2026-W27-5T08:00:00.5+09:00:30",
    "2026W275T080000,5-0930", "2026-W01-1T00Z", "2025-W01-1T00Z", "2027-W52-7T23:59:59Z",
    "2026-07-03T08:00:00+1559", "2026-07-03T08:00:00+1600", "2026-07-03T08:00:00-155959.999999",
    "2026-07-03T08:00:00+99", "2026-07-03T08:00:00+00:99", "2026-07-03T08:00:00+00:00:99",
]


def timestamps_part(c):
    for s in TIMESTAMPS:
        c.event(1, "timestamps", s, event_time=s)
    rng = random.Random(20260703)
    dates = ["2026-07-03", "20260703", "2026-W27-5", "2026W275", "2026-W27", "2026W27", "2026-184",
             "2026-07", "0001-01-01", "9999-12-31", "2026-02-30", "2024-02-29", "2026-W53-7",
             "2020-W53-7", "0000-01-01"]
    seps = ["T", "t", " ", "x", "\u00e9", "\u3000", "-", "1", "Z", "\u0001", ",", "W", ":", "+",
            "\u65e5"]
    times = ["08", "08:30", "0830", "08:30:15", "083015", "23:59:59", "24:00", "08:60", "8:30",
             "08:30:15.5", "08:30:15,123", "08:30:15.1234567", "083015.000001", "08:30:15.",
             "08,5", "0830,25", "08:30:15:1", "08:30:15.12x", "083015123", "08::30", ""]
    zones = ["Z", "z", "+00:00", "-00:00", "+09", "-0930", "+09:30", "+09:30:15", "+093015",
             "+09:30:15.5", "+09:30:15,25", "-15:59:59.999999", "+16", "-23:59", "+24",
             "+99:00", "", "ZZ", "+", "+9", "UTC", " Z", "+09:30:", "+0930.5", "+09:75",
             "-00:00:00.5", "+00:00:00.25", "Z+01", "+01Z"]
    alphabet = "0123456789-:.,+TZzW \u00e9x\u3000"
    for i in range(1600):
        s = rng.choice(dates) + rng.choice(seps) + rng.choice(times) + rng.choice(zones)
        for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
            pos = rng.randrange(len(s) + 1)
            op = rng.randrange(3)
            if op == 0:
                s = s[:pos] + rng.choice(alphabet) + s[pos:]
            elif op == 1 and pos < len(s):
                s = s[:pos] + s[pos + 1:]
            elif pos < len(s):
                s = s[:pos] + rng.choice(alphabet) + s[pos + 1:]
        if rng.random() < 0.1:
            s = rng.choice(" \u00a0\t\u2003") + s + rng.choice(" \u00a0\u3000\u0085")
        c.event(1, "timestamps (generated)", s, event_time=s)


def lower_part(c):
    """Every Unicode scalar value but NUL, packed into work_order_id and machine_id (gold keys
    are indexed, and an index row holds about 2.7 kB)."""
    cps = [cp for cp in scalar_values() if cp != 0]
    fields, cur, size = [], [], 0
    for cp in cps:
        cost = 12 if cp > 0xFFFF else 6
        if size + cost > 24000:
            fields.append(cur)
            cur, size = [], 0
        cur.append(cp)
        size += cost
    fields.append(cur)
    names = ("work_order_id", "machine_id")
    k = 0
    for i in range(0, len(fields), len(names)):
        group = fields[i:i + len(names)]
        ev = {}
        for name, chunk in zip(names, group):
            ev[name] = "x" + "".join(map(chr, chunk)) + "x"
        k += 1
        c.event(2 + k % 6, "every code point", "U+%04X..U+%04X" % (group[0][0], group[-1][-1]),
                ascii=(k % 2 == 0), business_date="2026-07-04", event_id="evt-cp-%d" % k, **ev)


def sigma_part(c, has_property):
    """Σ next to every character that is cased or case-ignorable for Python or for ICU."""
    candidates = sorted(cp for cp in scalar_values() if cp != 0 and (
        has_property(cp, 49) or has_property(cp, 50)            # UCHAR_CASED, UCHAR_CASE_IGNORABLE
        or ("A" + chr(cp) + "Σ-").lower().endswith("ς-")))      # cased or case-ignorable here
    units = []
    for cp in candidates:
        ch = chr(cp)
        units += ["-%sΣ-" % ch, "A%sΣ-" % ch, "AΣ%s-" % ch, "-Σ%sA" % ch, "%sΣ" % ch]
    k = 0
    for i in range(0, len(units), 600):
        k += 1
        text = "".join(units[i:i + 600])
        c.event(2 + k % 6, "final sigma", "%d contexts" % len(units[i:i + 600]), ascii=(k % 2 == 1),
                business_date="2026-07-04", event_id="evt-sigma-%d" % k,
                work_order_id="w" + text, machine_id="m" + text[::-1])


def differences_part(c):
    """Values the seed accepts and kafka_lake refuses, one documented difference each."""
    good = dict(BASE, event_id="evt-diff", work_order_id="wo-diff")
    members = ", ".join('"%s": %s' % (k, json.dumps(v)) for k, v in good.items())
    c.add(0, "differences", "{" + members + ', "units_produced": 11}', "duplicate field name")
    c.event(0, "differences", "integer beyond int64", units_produced=2**63, defect_count=0)
    c.event(0, "differences", "integer beyond int64", cycle_time_ms=10**30)
    c.event(0, "differences", "value over 64 KiB", event_id="evt-big-" + "x" * 70000)
    c.event(0, "differences", "NUL character", line_id="line\u000001")
    c.add(0, "differences", json.dumps(dict(good, event_id="evt-sur")).replace(
        '"plant-01"', '"plant-\\ud800"'), "unpaired surrogate")
    c.event(0, "differences", "business_date not YYYY-MM-DD", business_date="20260703")
    c.event(0, "differences", "business_date not YYYY-MM-DD", business_date="2026-W27-5")
    c.event(0, "differences", "business_date not YYYY-MM-DD", business_date=" 2026W275 ")
    c.event(0, "differences", "UTC offset beyond 15:59:59",
            event_time="2026-07-03T08:00:00+16:00")
    c.event(0, "differences", "UTC offset beyond 15:59:59",
            event_time="2026-07-03T08:00:00-23:59:59.999999")


GOLD_TIES = [
    # (units, defects, cycle times) of one group
    (128, 1, [812] * 7 + [813]),                 # 1/128 = 0.0078125: even 0.007812; 812.125: 812.12
    (128, 3, [812] * 5 + [813] * 3),             # 3/128 = 0.0234375: 0.023438; 812.375: 812.38
    (2000000, 1, [1]),                           # 5e-07 is a little less than its decimal: 0
    (40, 1, [3] * 27 + [2] * 13),                # 107/40 = 2.675: a little less, 2.67
    (8, 1, [1, 1, 1, 1, 1, 1, 1, 2]),            # 0.125; 9/8 = 1.125: 1.12
    (3, 2, [1, 2, 2]),                           # 0.666667; 1.67
    (0, 0, [5, 6]),                              # no units: 0; 5.5
    (1, 1, [2**38 + 1, 2**38]),                  # a large average: 274877906944.5
    (9007199254740993, 1, [7]),                  # units beyond 2**53
]


def gold_part(c):
    rng = random.Random(8012026)
    groups = list(GOLD_TIES)
    # units beyond 2**53 whose quotient lies closer to a 6-decimal tie than one double step
    while len(groups) < len(GOLD_TIES) + 6:
        units = rng.randrange(2**53, 2**58)
        tie = (rng.randrange(10**6) * 10 + 5) / 10**7
        defects = round(tie * units)
        if 0 <= defects <= units and \
                round(defects / units, 6) != round(float(defects) / float(units), 6):
            groups.append((units, defects, [rng.randrange(1, 10**5)]))
    for _ in range(300):
        n = rng.randrange(1, 7)
        units = rng.choice((rng.randrange(0, 200), rng.randrange(0, 10**7), 2**rng.randrange(1, 20)))
        defects = rng.randrange(0, units + 1)
        groups.append((units, defects, [rng.randrange(1, 5000) for _ in range(n)]))
    for g, (units, defects, cycles) in enumerate(groups):
        n = len(cycles)
        for i, ms in enumerate(cycles):
            u = units // n + (1 if i < units % n else 0)
            d = defects // n + (1 if i < defects % n else 0)
            c.event(8 + g % 4, "gold", "group %d" % g, business_date="2026-08-01",
                    event_time="2026-08-01T%02d:%02d:00Z" % (i // 60, i % 60),
                    line_id="line-%04d" % g, product_code="prd-g", units_produced=u,
                    defect_count=d, cycle_time_ms=ms)
    return groups


def make_corpus():
    c = Corpus()
    char_type, char_direction, has_property = icu()
    names_part(c)
    identifiers_part(c, char_type, char_direction)
    differences_part(c)
    timestamps_part(c)
    lower_part(c)
    sigma_part(c, has_property)
    gold_part(c)
    # offsets, in produce order per partition
    next_offset = {}
    for r in c.records:
        r["offset"] = next_offset.get(r["partition"], 0)
        next_offset[r["partition"]] = r["offset"] + 1
    return c.records


def write_corpus(out):
    records = make_corpus()
    os.makedirs(out, exist_ok=True)
    files = {p: open(os.path.join(out, "p%d.kv" % p), "wb") for p in range(PARTITIONS)}
    for r in records:
        assert b"\n" not in r["value"] and b"\t" not in r["value"], r["note"]
        files[r["partition"]].write(r["key"].encode() + b"\t" + r["value"] + b"\n")
    for f in files.values():
        f.close()
    with open(os.path.join(out, "corpus.json"), "w") as f:
        json.dump([dict(r, value=r["value"].decode("latin-1")) for r in records], f)
    by_cat = {}
    for r in records:
        by_cat[r["category"]] = by_cat.get(r["category"], 0) + 1
    print(len(records), "records:", ", ".join("%s %d" % kv for kv in by_cat.items()))


# ---------------------------------------------------------------- reading what kafka_lake landed

def load(out):
    with open(os.path.join(out, "corpus.json")) as f:
        records = json.load(f)
    for r in records:
        r["value"] = r["value"].encode("latin-1")
    return records


def expectations(records):
    """Each record's expected status and event, duplicates decided in landing order."""
    seen = set()
    for r in sorted(records, key=lambda r: (r["partition"], r["offset"])):
        status, event, reasons = kl_judge(r["value"])
        if status == "accepted" and event["event_id"] in seen:
            status = "duplicate_event_id"
        elif status == "accepted":
            seen.add(event["event_id"])
        r["expected"], r["event"], r["reasons"] = status, event, reasons
    return records


def read_landing(landing):
    """(partition, offset) -> (status, line text) for every landed record."""
    got = {}
    files = {"accepted.jsonl": "accepted", "duplicates.jsonl": "duplicate_event_id",
             "quarantine.jsonl": "quarantined"}
    for batch in glob.glob(os.path.join(landing, "topic=*", "partition=*", "batch=*")):
        for name, status in files.items():
            with open(os.path.join(batch, name), encoding="utf-8") as f:
                for line in f:
                    k = json.loads(line)["kafka"]
                    got[(k["partition"], k["offset"])] = (status, line.rstrip("\n"), k)
    return got


def show(r):
    return "p%d o%d [%s] %s: %r" % (r["partition"], r["offset"], r["category"], r["note"][:80],
                                   r["value"][:160])


def report(name, bad, total):
    if bad:
        print("%s: %d of %d differ" % (name, len(bad), total))
        for line in bad[:12]:
            print("  " + line)
        return 1
    print("%s: all %d agree" % (name, total))
    return 0


def check_statuses(out, landing):
    records = expectations(load(out))
    got = read_landing(landing)
    bad = []
    for r in records:
        status = got.get((r["partition"], r["offset"]), ("missing",))[0]
        if status != r["expected"]:
            bad.append("%s: landed %s, expected %s%s" % (show(r), status, r["expected"],
                                                        " (%s)" % ", ".join(r["reasons"]) if r["reasons"] else ""))
    counts = {}
    for r in records:
        for reason in r["reasons"]:
            counts[reason] = counts.get(reason, 0) + 1
    print("statuses: accepted %d, duplicate_event_id %d, quarantined %d" % tuple(
        sum(1 for r in records if r["expected"] == s)
        for s in ("accepted", "duplicate_event_id", "quarantined")))
    print("the seed accepts, kafka_lake refuses, by documented difference: " +
          ", ".join("%s %d" % kv for kv in sorted(counts.items())))
    documented = {"value over 64 KiB", "duplicate field name", "integer beyond int64",
                  "NUL character", "unpaired surrogate", "business_date not YYYY-MM-DD",
                  "UTC offset beyond 15:59:59"}
    if set(counts) != documented:
        bad.append("the corpus must exercise every documented difference: %s"
                   % sorted(documented - set(counts)))
    return report("statuses", bad, len(records))


def check_events(out, landing):
    records = expectations(load(out))
    got = read_landing(landing)
    bad, n = [], 0
    for r in records:
        if r["expected"] not in ("accepted", "duplicate_event_id"):
            continue
        n += 1
        # the seed's landing writes json.dumps(envelope, ensure_ascii=True, sort_keys=True):
        # {"duplicate_of": ..., "event": ..., "kafka": ...}
        want = '"event": ' + json.dumps(r["event"], ensure_ascii=True, sort_keys=True) + ', "kafka": '
        line = got.get((r["partition"], r["offset"]), (None, ""))[1]
        first = '{"event": ' if r["expected"] == "accepted" else '{"duplicate_of": '
        if not line.startswith(first) or want not in line:
            bad.append("%s:\n    landed   %s\n    expected %s" % (show(r), line[:300], want[:300]))
        # the seed's adapter validates the landed event again: it must be a fixed point
        if seed_normalise(dict(r["event"])) != r["event"]:
            bad.append("%s: the seed's contract is not idempotent on this event" % show(r))
    return report("events", bad, n)


def check_instants(out, path):
    records = expectations(load(out))
    got = {}
    with open(path) as f:
        for line in f:
            p, o, us = line.split()
            got[(int(p), int(o))] = int(us)
    bad, n = [], 0
    for r in records:
        if r["expected"] != "accepted":
            continue
        n += 1
        want = seed_instant_usec(r["event"]["event_time"])
        have = got.get((r["partition"], r["offset"]))
        # digits beyond microseconds are rounded as timestamptz rounds them, Python truncates
        long_fraction = re.search(r"[0-9]{7}", r["event"]["event_time"]) is not None
        if have != want and not (long_fraction and have == want + 1):
            bad.append("%s: read %s, Python %s" % (show(r), have, want))
    return report("instants", bad, n)


def seed_csv(records, landing, day):
    got = read_landing(landing)
    rows = []
    for r in records:
        if r["expected"] != "accepted" or r["event"]["business_date"] != day:
            continue
        e = r["event"]
        k = got[(r["partition"], r["offset"])][2]
        ts = k["timestamp_ms"]
        rows.append(((TOPIC, r["partition"], r["offset"]),
                     [e[c] for c in CSV_COLUMNS[:11]] +
                     [e["event_id"], e["schema_version"], TOPIC, r["partition"], r["offset"],
                      r["key"], "" if ts is None else ts,
                      fingerprint(r["partition"], r["offset"], r["key"], r["value"])]))
    rows.sort()
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    w.writerows(row for _, row in rows)
    return buf.getvalue().encode("utf-8"), [row for _, row in rows]


def check_csv(out, landing, day, path):
    records = expectations(load(out))
    want, rows = seed_csv(records, landing, day)
    with open(path, "rb") as f:
        have = f.read()
    bad = []
    if have != want:
        hl, wl = have.split(b"\n"), want.split(b"\n")
        for i, (a, b) in enumerate(zip(hl, wl)):
            if a != b:
                bad.append("line %d:\n    written  %r\n    expected %r" % (i + 1, a[:300], b[:300]))
                break
        if len(hl) != len(wl):
            bad.append("%d lines written, %d expected" % (len(hl), len(wl)))
    print("source_hash %s" % hashlib.sha256(want).hexdigest())
    return report("csv %s (%d events, %d bytes)" % (day, len(rows), len(want)), bad, 1)


def seed_gold(rows):
    """The seed's silver (dedup on the natural key as written, identifiers stripped and
    lower-cased again) and gold of the CSV rows of one date."""
    seen, groups = set(), {}
    for row in rows:
        ev = dict(zip(CSV_COLUMNS, row))
        key = (ev["work_order_id"], ev["machine_id"], ev["event_time"])
        if key in seen:
            continue
        seen.add(key)
        g = groups.setdefault((ev["plant_id"].strip().lower(), ev["line_id"].strip().lower(),
                               ev["product_code"].strip().lower()), [0, 0, 0, 0])
        g[0] += int(ev["units_produced"])
        g[1] += int(ev["defect_count"])
        g[2] += int(ev["cycle_time_ms"])
        g[3] += 1
    return {k: (u, d, round(d / u, 6) if u else 0, round(c / n, 2) if n else 0)
            for k, (u, d, c, n) in groups.items()}


def check_gold(out, landing, day, path):
    from decimal import Decimal
    records = expectations(load(out))
    want = seed_gold(seed_csv(records, landing, day)[1])
    have = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            plant, line_id, product, units, defects, rate, avg = line.rstrip("\n").split("\t")
            have[(plant, line_id, product)] = (int(units), int(defects), Decimal(rate), Decimal(avg))
    bad = []
    for k, (u, d, rate, avg) in sorted(want.items()):
        h = have.get(k)
        w = (u, d, Decimal(repr(rate)), Decimal(repr(avg)))
        if h != w:
            bad.append("%s: gold %s, seed %s (defects/units %d/%d)" % (k, h, w, d, u))
    if set(have) != set(want):
        bad.append("groups: gold %d, seed %d" % (len(have), len(want)))
    return report("gold %s" % day, bad, len(want))


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "corpus" and len(argv) == 3:
        write_corpus(argv[2])
        return 0
    if cmd == "statuses" and len(argv) == 4:
        return check_statuses(argv[2], argv[3])
    if cmd == "events" and len(argv) == 4:
        return check_events(argv[2], argv[3])
    if cmd == "instants" and len(argv) == 4:
        return check_instants(argv[2], argv[3])
    if cmd == "csv" and len(argv) == 6:
        return check_csv(*argv[2:6])
    if cmd == "gold" and len(argv) == 6:
        return check_gold(*argv[2:6])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
