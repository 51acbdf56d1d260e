"""Hugging Face Transformers with tracker: one line, ``callbacks=[TrackerCallback(...)]``.

A tiny BERT made from a config (no download) learns a toy classification
task for a few steps on the CPU; the TrainingArguments and the model's
config become the run's config, the train and eval logs its metrics.

Usage::

    python examples/transformers_example.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile

try:
    import accelerate  # noqa: F401 - the Trainer needs it
    import torch
    import transformers
except ImportError:
    print('examples/transformers_example.py needs Transformers: pip install torch==2.13.0 '
          '"tracker-core[transformers]"')
    sys.exit(0)

from tracker.integrations.transformers import TrackerCallback


class Tokens(torch.utils.data.Dataset):
    """Random token sequences; the label says whether the first token is in the upper half."""

    def __init__(self, n: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(0, 64, (n, 12), generator=g)
        self.y = (self.x[:, 0] >= 32).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.x[i], "labels": self.y[i]}


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=16, num_labels=2)
    model = transformers.BertForSequenceClassification(config)
    callback = TrackerCallback(project="examples", name="tiny-bert", tags=["example", "transformers"])
    with tempfile.TemporaryDirectory() as out:
        args = transformers.TrainingArguments(output_dir=out, max_steps=40, per_device_train_batch_size=16,
                                              learning_rate=3e-3, logging_steps=5, eval_strategy="steps",
                                              eval_steps=20, save_strategy="no", report_to=[], use_cpu=True,
                                              disable_tqdm=True)
        trainer = transformers.Trainer(model=model, args=args, train_dataset=Tokens(320, 0),
                                       eval_dataset=Tokens(64, 1), callbacks=[callback])
        trainer.train()
    subprocess.run([sys.executable, "-m", "tracker", "show", callback.run.id], check=True)


if __name__ == "__main__":
    main()
