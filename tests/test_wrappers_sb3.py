"""examples/sb3_ppo.py: PPO through the numeric wrappers beats a random policy (seeded, CPU)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sb3_ppo.py"


@pytest.fixture(scope="module")
def sb3_ppo():
    spec = importlib.util.spec_from_file_location("sb3_ppo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sb3_ppo"] = module  # the tracker's tools are resolved as "sb3_ppo:<name>"
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("sb3_ppo", None)


def test_tracker_passes_check_env(sb3_ppo):
    from stable_baselines3.common.env_checker import check_env

    check_env(sb3_ppo.make_env())


def test_ppo_beats_random_on_the_tracker(sb3_ppo):
    scores = sb3_ppo.compare(timesteps=24_000, seed=0, episodes=100)
    random, ppo = scores["random"], scores["ppo"]
    assert random.success_rate < 0.15
    assert ppo.success_rate >= 0.6 and ppo.success_rate > random.success_rate + 0.4
    assert ppo.mean_reward > random.mean_reward + 0.3


def test_maskable_ppo_learns_through_action_masks(sb3_ppo):
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.utils import get_action_masks

    model = sb3_contrib.MaskablePPO("MlpPolicy", sb3_ppo.make_env(), n_steps=64, seed=0)
    model.learn(128)
    masks = get_action_masks(model.get_env())
    assert masks.shape == (1, model.get_env().action_space.n) and masks.any()
    obs = model.get_env().reset()
    action, _ = model.predict(obs, action_masks=masks)
    assert masks[0][int(action[0])]
