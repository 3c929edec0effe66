# memlens' Python API in a program of its own (as a notebook or a test would use it): a
# recording around part of the program, steps marked by hand (no optimizer here), and
# named regions. Only what runs inside the block is recorded.
import sys

import torch

import memlens

before = torch.ones(1000)  # made before the recording: adopted as an input when used
with memlens.record(sys.argv[1]):
    for step in range(4):
        with memlens.scope("forward"):
            out = (before * step).sum()
        memlens.step()
after = torch.ones(1000)  # not recorded
print("recording:", memlens.recording())
