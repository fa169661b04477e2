#!/usr/bin/env python3
"""Slow clients cannot hold blq-demo: DAEMON is started with --request-time 2,
then 40 connections from one address (above the 32 allowed per address)
each send a request line and then one header byte a second, never ending
their headers (a slowloris). Within the deadline plus a margin every one of
them must be closed by the daemon and a normal request must be answered.
Usage: slow_clients.py DAEMON"""
import os, socket, subprocess, sys, tempfile, time, urllib.request

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def ping(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/ping", timeout=2) as r:
            return r.status == 200
    except Exception:
        return False

def main():
    daemon = sys.argv[1]
    api, met = free_port(), free_port()
    work = tempfile.mkdtemp(prefix="blq-slow.")
    proc = subprocess.Popen([daemon, "--listen", f"127.0.0.1:{api}", "--metrics-listen",
                             f"127.0.0.1:{met}", "--dump-dir", os.path.join(work, "dump"),
                             "--request-time", "2", "--log-level", "warn"],
                            stderr=open(os.path.join(work, "daemon.log"), "w"))
    try:
        for _ in range(50):
            if ping(api): break
            time.sleep(0.1)
        else:
            print("slow_clients: daemon did not start"); return 1
        held = []
        for _ in range(40):
            try:
                s = socket.create_connection(("127.0.0.1", api), timeout=2)
                s.sendall(b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                held.append(s)
            except OSError:
                pass  # refused: over the per-address limit, as it should be
        print(f"slow_clients: {len(held)} slow connections open")
        t0, answered, closed = time.time(), False, set()
        while time.time() - t0 < 8 and not (answered and len(closed) == len(held)):
            for i, s in enumerate(held):
                if i in closed: continue
                try:
                    s.sendall(b"x")
                    s.settimeout(0.01)
                    if s.recv(100) == b"": closed.add(i)
                except (socket.timeout, BlockingIOError):
                    pass
                except OSError:
                    closed.add(i)
            answered = answered or (len(closed) > 0 and ping(api))
            time.sleep(0.5)
        took = time.time() - t0
        print(f"slow_clients: after {took:.1f} s: {len(closed)}/{len(held)} cut by the daemon, "
              f"ping {'answered' if answered else 'NOT answered'}")
        if len(held) == 0 or len(closed) != len(held) or not answered or took > 6:
            print("slow_clients: FAILED"); return 1
        if proc.poll() is not None:
            print("slow_clients: daemon died"); return 1
        return 0
    finally:
        proc.terminate()
        try: proc.wait(10)
        except subprocess.TimeoutExpired: proc.kill()

sys.exit(main())
