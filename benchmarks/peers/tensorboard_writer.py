"""TensorBoard event files through tensorboardX's ``SummaryWriter`` (4 ``add_scalar`` per step).

tensorboardX is the writer that needs neither PyTorch nor TensorFlow; the
``torch.utils.tensorboard`` writer has the same structure.
"""

import sys

from common import main

CODE = '''
from tensorboardX import SummaryWriter

def setup(folder):
    return SummaryWriter(logdir=folder)

def log(writer, step, values):
    for k, v in values.items():
        writer.add_scalar(k, v, step)

def finish(writer):
    writer.close()
'''

if __name__ == "__main__":
    sys.exit(main("tensorboardX SummaryWriter", "tensorboardX", ["tensorboardX"], CODE, steps=5000))
