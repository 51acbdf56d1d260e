"""DVCLive: ``live.log_metric`` for each of the 4 metrics, then ``live.next_step()``."""

import sys

from common import main

CODE = '''
from dvclive import Live

def setup(folder):
    os.makedirs(folder, exist_ok=True)
    os.chdir(folder)
    return Live(dir=os.path.join(folder, "dvclive"), save_dvc_exp=False)

def log(live, step, values):
    for k, v in values.items():
        live.log_metric(k, v)
    live.next_step()

def finish(live):
    live.end()
'''

if __name__ == "__main__":
    sys.exit(main("dvclive", "dvclive", ["dvclive"], CODE, steps=100))
