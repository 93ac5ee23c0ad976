"""Train and evaluate an agent: SFT warm start → GRPO (or SFT) → held-out evaluation.

    python experiments/train.py                         # the CPU demo (conf/train.yaml)
    python experiments/train.py algo.steps=2 eval.max_tasks=6
    python experiments/train.py -m algo.lr=5e-5,1e-4 algo.group_size=4,8   # a sweep
    python experiments/train.py --config-name gpu       # real scale (GPU, vLLM)
    python experiments/train.py llm=openai llm.model=NAME   # evaluate a served model

Each run writes to its own folder (``outputs/<date>/<time>``, or ``multirun/...`` for sweeps):
``metrics.jsonl``, ``training_curves.png``, ``eval_table.md``, ``eval_report.json``,
``eval.png``, ``summary.json``,
checkpoints (a rerun with the same folder, ``hydra.run.dir=...``, resumes), the wandb run.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from algorithms.pipeline import register_configs, run  # noqa: E402

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    summary = run(OmegaConf.to_object(cfg), Path(HydraConfig.get().runtime.output_dir))
    return summary.get("trained/held-out envs/success")


if __name__ == "__main__":
    main()
