"""MLflow with its file store: ``mlflow.log_metrics(values, step=i)`` in an active run.

MLflow 3 keeps the file store in maintenance mode and refuses it unless
``MLFLOW_ALLOW_FILE_STORE=true``, which this script sets.
"""

import sys

from common import main

CODE = '''
import mlflow

def setup(folder):
    mlflow.set_tracking_uri("file:" + folder)
    return mlflow.start_run()

def log(run, step, values):
    mlflow.log_metrics(values, step=step)

def finish(run):
    mlflow.end_run()
'''

if __name__ == "__main__":
    sys.exit(main("mlflow (file store)", "mlflow", ["mlflow"], CODE, steps=500,
                  env={"MLFLOW_ENABLE_ASYNC_LOGGING": "false", "MLFLOW_ALLOW_FILE_STORE": "true"}))
