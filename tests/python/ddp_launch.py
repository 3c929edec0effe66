# Starts ddp.py on two ranks as torchrun does (RANK, WORLD_SIZE, LOCAL_RANK and the
# rendezvous address in each worker's environment), on this machine's loopback. Debian's
# torchrun (PyTorch 1.13 on Python 3.11) cannot start: its Std.from_str breaks on 3.11.
import os
import socket
import subprocess
import sys
import time

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp.py")
workers = []
for rank in range(2):
    env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    workers.append(subprocess.Popen([sys.executable, script], env=env))
# Like torchrun: when one worker fails, the others are stopped, not left waiting for it.
status = 0
try:
    while workers:
        for w in list(workers):
            code = w.poll()
            if code is not None:
                workers.remove(w)
                status = status or code
        if status:
            break
        time.sleep(0.05)
finally:
    for w in workers:
        w.kill()
sys.exit(status)
