"""Pair evaluations of the same held-out sets from separate runs into one report.

    python experiments/pair_evals.py OUT base=RUN_A sft=RUN_B:trained

Each ``LABEL=RUN[:NAME]`` takes the results labelled ``NAME`` (default: ``LABEL``) from
``RUN/eval_results.json`` (written by every ``experiments/train.py`` run that evaluates) and
calls them ``LABEL``; OUT gets ``eval_table.md``, ``eval_report.json`` and ``eval.png`` with
paired differences (``sft-base``, ``trained-sft``, ``trained-base``) where both sides have the
same episodes. Use it when a job's evaluations ran as separate commands, e.g. the base model
once and each trained model in its own run, on the same catalog snapshot and ``eval.*``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from algorithms import heldout  # noqa: E402


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    out, results = Path(argv[0]), {}
    for arg in argv[1:]:
        label, _, source = arg.partition("=")
        run, _, name = source.partition(":")
        results[label] = heldout.read_results(Path(run) / "eval_results.json")[name or label]
    out.mkdir(parents=True, exist_ok=True)
    print(heldout.write(heldout.report(results), out))


if __name__ == "__main__":
    main(sys.argv[1:])
