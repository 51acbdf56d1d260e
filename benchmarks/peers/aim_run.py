"""Aim: ``run.track(value, name=..., step=i)`` for each of the 4 metrics."""

import sys

from common import main

CODE = '''
from aim import Run

def setup(folder):
    os.makedirs(folder, exist_ok=True)
    return Run(repo=folder, system_tracking_interval=None, log_system_params=False, capture_terminal_logs=False)

def log(run, step, values):
    for k, v in values.items():
        run.track(v, name=k, step=step)

def finish(run):
    run.close()
'''

if __name__ == "__main__":
    sys.exit(main("aim", "aim", ["aim"], CODE, steps=1000))
