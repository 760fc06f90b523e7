"""The training loop's own behaviour: a teacher, thread settings, bf16 updates."""

from __future__ import annotations

import numpy as np
import torch
from helpers import TINY

from liars_train import ppo


def agreement_with_bot(policy, bot: str, rules, games: int = 256) -> float:
    """Share of decisions where the policy's argmax is the bot's, in games the bot plays."""
    from liars_env.agents.batched import make_batched_bot
    from liars_env.batched import BatchedEnv, sample_legal

    env = BatchedEnv(rules, num_envs=games, seed=5)
    obs, mask = env.reset()
    teacher, rows = make_batched_bot(env, bot), torch.arange(games)
    gen = torch.Generator().manual_seed(0)
    agree = []
    for _ in range(12):
        with torch.no_grad():
            logits, _ = policy(obs, mask)
        chosen = teacher.act(mask, rows, obs)
        agree.append((logits.argmax(1) == chosen).float().mean().item())
        mixed = torch.where(torch.rand(games, generator=gen) < 0.1, sample_legal(mask, gen), chosen)
        obs, mask, *_ = env.step(mixed)
    return float(np.mean(agree))


def test_a_teacher_is_imitated_then_faded_out(tmp_path):
    """Kickstarting: the policy trained with the imitation loss agrees with the teacher far
    more often than the same run without it; the weight fades to 0 on schedule."""
    common = [*TINY, "total_steps=6144", "update_epochs=4", "eval_every=0", "final_eval_games=0"]
    common += ["learning_rate=0.001", "anneal_lr=false", "hidden_size=64"]
    taught = ppo.Trainer(
        ppo.load_args(
            None,
            [
                f"runs_dir={tmp_path}",
                "run_name=kick",
                *common,
                "teacher=probabilistic",
                "teacher_coef=5.0",
                "teacher_steps=6144",  # fading over the whole run
            ],
        )
    )
    assert taught._teacher_weight() == 5.0
    taught.train()
    assert taught._teacher_weight() == 0.0
    control = ppo.Trainer(ppo.load_args(None, [f"runs_dir={tmp_path}", "run_name=ctl", *common]))
    control.train()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "kick")).Reload()
    weight = [e.value for e in events.Scalars("train/teacher_weight")]
    # 512 decisions per update: 12 updates of fading weight, the last near 0
    assert weight[0] == 5.0 and weight == sorted(weight, reverse=True) and len(weight) == 12
    loss = [e.value for e in events.Scalars("train/teacher_loss")]
    assert loss[-1] < loss[0] - 1.0, loss  # the teacher's moves became likely (3.8 → ~2)
    rules = ppo.game_rules(taught.args)
    with_teacher = agreement_with_bot(taught.policy, "probabilistic", rules)
    without = agreement_with_bot(control.policy, "probabilistic", rules)
    # (the margin was 0.04–0.07 over seeds 0–2; with the teacher gone for the last third
    # of the run, 0.02–0.07)
    assert with_teacher > without + 0.03, (with_teacher, without)


def test_training_gives_the_callers_thread_setting_back(tmp_path):
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        args = ppo.load_args(None, [f"runs_dir={tmp_path}", "run_name=t", *TINY, "total_steps=512"])
        trainer = ppo.Trainer(args)
        assert torch.get_num_threads() == 2 and trainer.threads == 1
        seen = []
        learn = trainer._learn
        trainer._learn = lambda *a, **k: seen.append(torch.get_num_threads()) or learn(*a, **k)
        trainer.train()
        assert seen == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_bf16_update_learns_and_keeps_float32_weights(tmp_path):
    """The bfloat16 update learns like the float32 one: imitating a teacher, the loss falls
    by the same margin; weights and optimizer state stay float32."""
    common = [*TINY, "total_steps=6144", "update_epochs=4", "eval_every=0", "final_eval_games=0"]
    common += ["learning_rate=0.001", "anneal_lr=false", "hidden_size=64"]
    common += ["teacher=probabilistic", "teacher_coef=5.0", "teacher_steps=4096"]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    drops = {}
    for bf16 in (False, True):
        name = f"bf16_{bf16}"
        sets = [f"runs_dir={tmp_path}", f"run_name={name}", *common, f"bf16_update={bf16}"]
        trainer = ppo.Trainer(ppo.load_args(None, sets))
        dtypes = set()
        trainer.policy.torso.register_forward_hook(
            lambda m, i, out, seen=dtypes: seen.add(out.dtype)
        )
        trainer.train()
        assert all(p.dtype == torch.float32 for p in trainer.policy.parameters())
        assert (torch.bfloat16 in dtypes) == bf16, dtypes  # autocast ran in the update only
        loss = [
            e.value
            for e in EventAccumulator(str(tmp_path / name)).Reload().Scalars("train/teacher_loss")
        ]
        drops[bf16] = loss[0] - loss[-1]
    assert drops[True] > 1.0 and drops[True] > 0.7 * drops[False], drops


def test_a_requested_stop_ends_the_loop_between_updates_and_the_run_resumes(tmp_path):
    import pytest

    from liars_train.ppo.trainer import StopRequested

    sets = [f"runs_dir={tmp_path}", "run_name=stop", *TINY, "checkpoint_every=1"]
    trainer = ppo.Trainer(ppo.load_args(None, sets))
    learn = trainer._learn

    def learn_then_ask(*a, **k):  # as liars-train's Ctrl-C handler does, mid-update
        out = learn(*a, **k)
        if trainer.update == 1:
            trainer.request_stop()
        return out

    trainer._learn = learn_then_ask
    with pytest.raises(StopRequested, match="stopped at update 2"):
        trainer.train()
    assert issubclass(StopRequested, KeyboardInterrupt)
    resumed = ppo.Trainer(ppo.load_args(None, sets), resume=True)
    assert resumed.update == 2 and not resumed.stop_requested
    resumed.train()
    assert resumed.update == resumed.num_updates == 4
