"""trackio in local mode: ``trackio.init``, ``trackio.log(values)``, ``trackio.finish()``."""

import sys

from common import main

CODE = '''
import trackio

def setup(folder):
    os.environ["TRACKIO_DIR"] = folder
    return trackio.init(project="bench", name=os.path.basename(folder))

def log(run, step, values):
    trackio.log(dict(values), step=step)

def finish(run):
    trackio.finish()
'''

if __name__ == "__main__":
    sys.exit(main("trackio (local)", "trackio", ["trackio"], CODE, steps=5000))
