"""A stand-in for the dynolog daemon, for experiments with Kineto's on-demand configs.

Binds the ipcfabric endpoint (abstract "\\0dynolog\\0", or $KINETO_IPC_SOCKET_DIR/dynolog),
answers the job's "ctxt" registration and hands CONFIG (a file; "{log}" is replaced by
--log) to the first "req" of --pid that asks for activities. strata attach --kineto does
the same in C++ (collector/client/kineto_ipc.cpp); this one takes any config text.
"""
import argparse
import os
import socket
import struct
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--pid", type=int, required=True)
p.add_argument("--config", required=True)
p.add_argument("--log", required=True)
p.add_argument("--timeout", type=float, default=40)
a = p.parse_args()
config = open(a.config).read().replace("{log}", a.log)
# Placeholders resolved at delivery: {now_ms+N} -> wall-clock ms since the epoch plus N.
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
d = os.environ.get("KINETO_IPC_SOCKET_DIR")
addr = os.path.join(d, "dynolog") if d else b"\0dynolog\0"
if d and os.path.exists(addr):
    os.unlink(addr)
s.bind(addr)
s.settimeout(1.0)
deadline = time.time() + a.timeout
while time.time() < deadline:
    try:
        data, frm = s.recvfrom(65536)
    except socket.timeout:
        continue
    size, typ = struct.unpack("<Q32s", data[:40])
    typ = typ.split(b"\0")[0]
    payload = data[40:]
    done = False
    if typ == b"ctxt":
        gpu, pid, jobid = struct.unpack("<iiq", payload[:16])
        print(f"fake_dynolog: ctxt gpu={gpu} pid={pid}", flush=True)
        reply = struct.pack("<Q32s", 4, b"ctxt") + struct.pack("<i", 1)
    elif typ == b"req":
        t, n, jobid = struct.unpack("<iiq", payload[:16])
        pids = struct.unpack(f"<{n}i", payload[16:16 + 4 * n])
        want = (t & 2) != 0 and a.pid in pids
        text = config
        while "{now_ms+" in text:
            i = text.index("{now_ms+")
            j = text.index("}", i)
            text = text[:i] + str(int(time.time() * 1000) + int(text[i + 8:j])) + text[j + 1:]
        text = text if want else ""
        if want:
            print(f"fake_dynolog: req type={t} pids={pids} -> config:\n{text}", flush=True)
        reply = struct.pack("<Q32s", len(text), b"req") + text.encode()
        done = want
    else:
        continue
    s.sendto(reply, frm)
    if done:
        sys.exit(0)
print("fake_dynolog: timed out", flush=True)
sys.exit(1)
