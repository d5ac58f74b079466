#!/usr/bin/env python3
"""A command trial that takes a while: six steps of 0.4 s, reporting loss = (x - 1)^2 / step and
train_loss = loss + 0.1 each step (docs/command_jobs.md), and leaving a file in its folder
($TUNER_ARTIFACTS_DIR), for the MLflow tracking test's sweep whose server is stopped while it
runs."""
import json
import os
import pathlib
import sys
import time

x = json.loads(os.environ["TUNER_PARAMS"])["x"]
loss = 0.0
for step in range(1, 7):
    time.sleep(0.4)
    loss = (x - 1.0) ** 2 / step
    print(json.dumps({"step": step, "loss": loss, "train_loss": loss + 0.1}), flush=True)
folder = os.environ.get("TUNER_ARTIFACTS_DIR")
if folder:
    notes = pathlib.Path(folder) / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    (notes / "summary.txt").write_text(f"x = {x}\nloss = {loss}\n")
print(json.dumps({"loss": loss, "x": x}), flush=True)
sys.exit(0)
