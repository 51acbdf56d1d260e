"""W&B in offline mode: ``wandb.init(mode="offline")``, ``run.log(values, step=i)``, ``run.finish()``."""

import sys

from common import main

CODE = '''
import wandb

def setup(folder):
    os.makedirs(folder, exist_ok=True)
    return wandb.init(mode="offline", dir=folder, project="bench", settings=wandb.Settings(silent=True))

def log(run, step, values):
    run.log(values, step=step)

def finish(run):
    run.finish()
'''

if __name__ == "__main__":
    sys.exit(main("wandb (offline)", "wandb", ["wandb"], CODE, steps=2000, env={"WANDB_SILENT": "true"}))
