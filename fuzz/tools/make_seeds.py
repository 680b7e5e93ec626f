#!/usr/bin/env python3
"""Rebuilds fuzz/seeds/ from real data: DSH's conformance files (written and judged by DSH's
own code, tag dsh-v0.1.1-rc.2, MIT licence, (c) 2026 DeepSeek) and stores sessdb writes
from them. Run from the repository root with the conformance folder as the argument and a
release `sessdb` binary built; the seeds are committed, so neither is needed to fuzz.

    python3 fuzz/tools/make_seeds.py ../shared/conformance target/release/sessdb
"""
import glob, hashlib, json, os, shutil, sqlite3, struct, subprocess, sys, tempfile, zlib

conf, sessdb = sys.argv[1], sys.argv[2]
out = "fuzz/seeds"
MAX = 64 * 1024  # every seed fits the -max_len the README and CI use


def put(target, data, name=None):
    if len(data) > MAX or not data:
        return
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    name = name or hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def session_files(variant):
    return sorted(glob.glob(f"{conf}/dsh-written/{variant}/root/**/session.jsonl*", recursive=True))


# Nothing is removed first: the seeds a fuzzer found and the hand-made ones (a regression's
# input, the previous release's stores as `*-layout1`) stay beside what this writes.

# Lines: one per (event type, data shape) over every DSH-written raw session, headers too.
raw = [f for v in ["raw-nopack", "raw-pack-a", "raw-pack-b", "raw-pack-lone-surrogates",
                   "raw-pack-realistic-a"] for f in session_files(v)]
seen = set()
for path in raw:
    lines = open(path, "rb").read().split(b"\n")
    for line in lines:
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        data = obj.get("data") if isinstance(obj, dict) else None
        key = (obj.get("type"), tuple(sorted(data)) if isinstance(data, dict) else None,
               "surfaceOp" in obj and str(obj["surfaceOp"])[:12], "\\ud8" in line.decode("utf-8", "replace"))
        if key in seen:
            continue
        seen.add(key)
        put("event_line", line)
        put("json_validate", line)

# Whole sessions: the acceptance and replace targets read lines after the header.
small = sorted(raw, key=os.path.getsize)
for path in small[:: max(1, len(small) // 12)]:
    body = open(path, "rb").read()
    put("acceptance", body.split(b"\n", 1)[1] if b"\n" in body else body)
    put("seed_rejection", body)

# Import: DSH-written files (raw and zstd) and every targeted dsh-load mutation that fits.
for path in small[:: max(1, len(small) // 16)]:
    put("jsonl_import", open(path, "rb").read())
for path in session_files("zstd-pack")[:8]:
    put("jsonl_import", open(path, "rb").read())
cases = sorted(glob.glob(f"{conf}/dsh-load/*"))
targeted = [c for c in cases if not os.path.basename(c).startswith("rand_")]
for case in targeted[:: max(1, len(targeted) // 80)]:
    for path in glob.glob(f"{case}/root/**/session.jsonl*", recursive=True):
        put("jsonl_import", open(path, "rb").read())

# SQLite: DSH's schema-17 database cut down to two sessions.
with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "dsh.sqlite")
    shutil.copy(f"{conf}/dsh-sqlite/dsh-realistic-a.sqlite", db)
    os.chmod(db, 0o600)
    con = sqlite3.connect(db)
    tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
    keep = [r[0] for r in con.execute(
        "select session_id from events group by session_id order by count(*) limit 2")]
    marks = ",".join("?" * len(keep))
    con.execute(f"delete from events where session_id not in ({marks})", keep)
    con.execute(f"delete from sessions where id not in ({marks})", keep)
    con.commit()
    con.execute("pragma journal_mode=delete")
    con.execute("pragma page_size=1024")
    con.execute("vacuum")
    con.close()
    put("sqlite_import", open(db, "rb").read(), "dsh-schema17-two-sessions.sqlite")
    # A sessdb store of small DSH sessions: its segment and checkpoint, and their frames.
    store = os.path.join(tmp, "store")
    for path in small[len(small) // 5:len(small) // 5 + 3]:
        subprocess.run([sessdb, "-q", "import", "--jsonl", path, store], check=True)
    seg = open(sorted(glob.glob(f"{store}/segments/*.seg"))[0], "rb").read()
    end = 40  # the segment without its preallocated zeros: walk the frames
    while end + 16 <= len(seg) and struct.unpack_from("<I", seg, end)[0] > 0:
        end += 16 + struct.unpack_from("<I", seg, end)[0]
    seg = seg[:end]
    ckpts = sorted(glob.glob(f"{store}/checkpoints/*.ckpt"))
    ckpt = open(ckpts[-1], "rb").read() if ckpts else b""
    # store_open splits its input at byte[0] * len / 256: pad the segment (zeros are the
    # unwritten tail of a real segment) until the split falls on the checkpoint's start.
    for pad in range(0, 4096):
        total = len(seg) + pad + len(ckpt)
        at = next((a for a in range(1, 256) if a * total // 256 == len(seg) + pad), None)
        if at is not None:
            put("store_open", bytes([at]) + seg + b"\0" * pad + ckpt, "dsh-sessions-with-checkpoint")
            break
    put("store_open", bytes([255]) + seg, "dsh-sessions-segment-only")
    # The same store with one session deleted and compacted: segment 0 in the compacted
    # layout (kept frames, run and tombstone tables, footer) and the full checkpoint after.
    first = subprocess.run([sessdb, "ls", store, "--json"], check=True, capture_output=True).stdout
    subprocess.run([sessdb, "-q", "delete", store, json.loads(first)[0]["id"]], check=True)
    subprocess.run([sessdb, "-q", "compact", store], check=True)
    compacted = open(sorted(glob.glob(f"{store}/segments/*.seg"))[0], "rb").read()
    cck = open(sorted(glob.glob(f"{store}/checkpoints/*.ckpt"))[-1], "rb").read()
    # The footer must end the segment: the zeros that make the split fall right go after
    # the checkpoint instead (an open that refuses them replays the log: a seed all the same).
    for pad in range(0, 4096):
        total = len(compacted) + len(cck) + pad
        at = next((a for a in range(1, 256) if a * total // 256 == len(compacted)), None)
        if at is not None:
            put("store_open", bytes([at]) + compacted + cck + b"\0" * pad,
                "dsh-sessions-compacted-with-checkpoint")
            break
    put("store_open", bytes([255]) + compacted, "dsh-sessions-compacted-segment-only")
    put("log_decoders", seg[:4096], "segment-head")
    pos = 40
    while pos + 16 <= len(seg):
        length, = struct.unpack_from("<I", seg, pos)
        frame = seg[pos:pos + 16 + length]
        put("log_decoders", frame)
        put("log_decoders", bytes([seg[pos + 8]]) + frame[16:])
        pos += 16 + length
    if ckpt:
        put("log_decoders", ckpt[:MAX], "checkpoint")

# replace_validation reads bytes as its operation language: a few fixed byte strings.
for i in range(8):
    put("replace_validation", bytes((i * 37 + j * 11) % 256 for j in range(64 * (i + 1))))

for target in sorted(t for t in os.listdir(out) if os.path.isdir(os.path.join(out, t))):
    files = os.listdir(os.path.join(out, target))
    size = sum(os.path.getsize(os.path.join(out, target, f)) for f in files)
    print(f"{target}: {len(files)} seeds, {size // 1024} KiB")
