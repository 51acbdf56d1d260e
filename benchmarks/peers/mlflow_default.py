"""MLflow with no tracking URI set (its default store in the working folder)."""

import sys

from common import main

CODE = '''
import mlflow

def setup(folder):
    os.makedirs(folder, exist_ok=True)
    os.chdir(folder)
    mlflow.set_tracking_uri(None)
    return mlflow.start_run()

def log(run, step, values):
    mlflow.log_metrics(values, step=step)

def finish(run):
    mlflow.end_run()
'''

if __name__ == "__main__":
    sys.exit(main("mlflow (default store)", "mlflow", ["mlflow"], CODE, steps=100,
                  env={"MLFLOW_TRACKING_URI": ""}))
