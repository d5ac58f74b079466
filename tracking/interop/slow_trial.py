#!/usr/bin/env python3
"""A command trial that takes a while: six steps of 0.4 s, reporting loss = (x - 1)^2 / step
each step (docs/command_jobs.md), for the MLflow tracking test's sweep whose server is stopped
while it runs."""
import json
import os
import sys
import time

x = json.loads(os.environ["TUNER_PARAMS"])["x"]
loss = 0.0
for step in range(1, 7):
    time.sleep(0.4)
    loss = (x - 1.0) ** 2 / step
    print(json.dumps({"step": step, "loss": loss}), flush=True)
print(json.dumps({"loss": loss, "x": x}), flush=True)
sys.exit(0)
