"""Regularized self-play (magnetic mirror descent) in the PPO loss and trainer."""

from __future__ import annotations

import math

import pytest
import torch

from liars_env.agents.policy import masked_entropy, masked_kl
from liars_train import ppo
from liars_train import train as train_cli

TINY = [
    "total_steps=2048",
    "num_envs=64",
    "num_steps=8",
    "num_minibatches=2",
    "update_epochs=2",
    "hidden_size=32",
    "eval_every=0",
    "final_eval_games=0",
    "checkpoint_every=2",
    "progress=false",
    "torch_threads=1",
    "self_play=1.0",
    "league=[]",
    "pool_size=0",
]


def minibatch(seed: int = 0, rows: int = 64, actions: int = 13):
    gen = torch.Generator().manual_seed(seed)
    mask = torch.rand(rows, actions, generator=gen) < 0.6
    mask[:, 0] = True  # at least one legal action per row
    raw = torch.randn(rows, actions, generator=gen, requires_grad=True)
    logits = raw.masked_fill(~mask, -1e9)
    act = torch.multinomial(torch.softmax(logits.detach(), -1), 1, generator=gen).squeeze(1)
    noise = 0.3 * torch.randn(rows, actions, generator=gen)
    old_logp = torch.log_softmax(logits.detach() + noise, -1)
    old_logp = old_logp.gather(1, act[:, None]).squeeze(1)
    return dict(
        logits=logits,
        value=torch.randn(rows, generator=gen, requires_grad=True),
        mask=mask,
        actions=act,
        old_logp=old_logp,
        advantages=torch.randn(rows, generator=gen),
        returns=torch.randn(rows, generator=gen),
    ), raw


def args_with(*sets: str) -> ppo.Args:
    return ppo.load_args(None, list(sets))


def test_without_the_mmd_terms_the_loss_is_ppo_exactly():
    batch, _ = minibatch()
    args = args_with("ent_coef=0.05", "clip_coef=0.1", "vf_coef=0.7", "magnet=ema")
    loss, terms = ppo.ppo_loss(args, **batch, magnet_logits=batch["logits"] * 2, alpha=0.0)
    ratio = (
        torch.log_softmax(batch["logits"], -1).gather(1, batch["actions"][:, None]).squeeze(1)
        - batch["old_logp"]
    ).exp()
    adv = batch["advantages"]
    pg = torch.max(-adv * ratio, -adv * ratio.clamp(0.9, 1.1)).mean()
    value = 0.5 * ((batch["value"] - batch["returns"]) ** 2).mean()
    entropy = masked_entropy(batch["logits"], batch["mask"]).mean()
    assert torch.equal(loss, pg - 0.05 * entropy + 0.7 * value)
    assert "magnet_kl" not in terms and "prev_kl" not in terms


def test_zero_coefficients_train_bit_for_bit_like_plain_ppo(tmp_path):
    """Every magnet setting with α = β = 0 trains to the very same weights."""

    def weights(*extra):
        args = args_with(f"runs_dir={tmp_path}", f"run_name=r{len(extra)}", *TINY, *extra)
        trainer = ppo.Trainer(args)
        trainer.train()
        return trainer.policy.state_dict()

    plain = weights()
    other = weights("magnet=ema", "magnet_schedule=power", "magnet_ema_rate=0.3", "kl_coef=0")
    assert all(torch.equal(plain[k], other[k]) for k in plain)


def test_the_uniform_magnet_is_the_entropy_term_up_to_a_constant():
    batch, raw = minibatch(seed=3)
    logits, mask = batch["logits"], batch["mask"]
    kl = masked_kl(logits, None, mask)
    legal = mask.sum(-1).double().log()
    entropy = masked_entropy(logits, mask)
    torch.testing.assert_close(kl.double(), legal - entropy.double(), rtol=0, atol=1e-5)
    # so their gradients (the update) are the same: α·KL(π‖uniform) vs −α·H
    magnet = args_with("ent_coef=0", "magnet_coef=0.2")
    bonus = args_with("ent_coef=0.2")
    (g_magnet,) = torch.autograd.grad(ppo.ppo_loss(magnet, **batch, alpha=0.2)[0], raw)
    batch, raw = minibatch(seed=3)
    (g_bonus,) = torch.autograd.grad(ppo.ppo_loss(bonus, **batch)[0], raw)
    torch.testing.assert_close(g_magnet, g_bonus, rtol=1e-5, atol=1e-7)


def test_magnet_kl_is_zero_at_the_magnet_and_positive_elsewhere():
    batch, _ = minibatch(seed=4)
    logits, mask = batch["logits"], batch["mask"]
    assert masked_kl(logits, logits.detach(), mask).abs().max() < 1e-5
    other = logits.detach() + torch.randn(logits.shape).masked_fill(~mask, 0)
    assert (masked_kl(logits, other, mask)[mask.sum(-1) > 1] > 0).all()


def test_the_kl_to_the_previous_policy_is_estimated_without_bias():
    """E_{a~π_old}[r log r − (r − 1)] is KL(π_θ ‖ π_old), here by an exact sum."""
    gen = torch.Generator().manual_seed(5)
    new = torch.softmax(torch.randn(7, generator=gen), -1)
    old = torch.softmax(torch.randn(7, generator=gen), -1)
    ratio = new / old
    estimate = (old * (ratio * ratio.log() - (ratio - 1))).sum()
    assert math.isclose(estimate.item(), (new * (new / old).log()).sum().item(), rel_tol=1e-5)
    batch, _ = minibatch(seed=6)
    args = args_with("kl_coef=0.5")
    loss, terms = ppo.ppo_loss(args, **batch)
    plain, _ = ppo.ppo_loss(args_with(), **batch)
    assert terms["prev_kl"] >= 0
    torch.testing.assert_close(loss, plain + 0.5 * terms["prev_kl"])


def test_the_ema_magnet_follows_its_rate(tmp_path, monkeypatch):
    rate = 0.3
    args = args_with(
        f"runs_dir={tmp_path}",
        "run_name=ema",
        *TINY,
        "magnet=ema",
        "magnet_coef=0.1",
        f"magnet_ema_rate={rate}",
    )
    trainer = ppo.Trainer(args)
    expected = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
    learn = ppo.Trainer._learn

    def learn_and_follow(self, *a, **k):
        out = learn(self, *a, **k)
        for key, value in self.policy.state_dict().items():
            expected[key] = expected[key] + rate * (value - expected[key])
        return out

    monkeypatch.setattr(ppo.Trainer, "_learn", learn_and_follow)
    trainer.train()
    magnet = trainer.magnet_net.state_dict()
    policy = trainer.policy.state_dict()
    moved = [k for k in policy if not torch.equal(policy[k], magnet[k])]
    assert moved  # the magnet lags the policy...
    for key in magnet:  # ...by exactly the moving average of its iterates
        torch.testing.assert_close(magnet[key], expected[key], rtol=1e-5, atol=1e-6)


def test_schedules_of_the_magnet_weight():
    linear = args_with("magnet_coef=0.4", "magnet_schedule=linear")
    assert [ppo.magnet_weight(linear, u, 4) for u in range(4)] == pytest.approx(
        [0.4, 0.3, 0.2, 0.1]
    )
    power = args_with("magnet_coef=0.4", "magnet_schedule=power", "magnet_power=1")
    assert [ppo.magnet_weight(power, u, 4) for u in range(3)] == pytest.approx([0.4, 0.2, 0.4 / 3])
    assert ppo.magnet_weight(args_with("magnet_coef=0.4"), 3, 4) == 0.4


def test_the_entropy_schedule():
    linear = args_with("ent_coef=0.05", "ent_schedule=linear", "ent_coef_end=0.01")
    assert [ppo.entropy_weight(linear, u, 4) for u in range(4)] == pytest.approx(
        [0.05, 0.04, 0.03, 0.02]
    )
    # ent_coef_end alone changes nothing: the schedule is constant unless asked
    assert ppo.entropy_weight(args_with("ent_coef=0.05", "ent_coef_end=0.01"), 3, 4) == 0.05


def test_the_loss_uses_the_scheduled_entropy_weight():
    batch, _ = minibatch(seed=5)
    args = args_with("ent_coef=0.05", "ent_schedule=linear", "ent_coef_end=0.0")
    entropy = masked_entropy(batch["logits"], batch["mask"]).mean()
    at_start, _ = ppo.ppo_loss(args, **batch)
    at_end, _ = ppo.ppo_loss(args, **batch, ent_coef=0.0)
    torch.testing.assert_close(at_end - at_start, 0.05 * entropy)


def test_the_trainer_follows_the_entropy_schedule(tmp_path, monkeypatch):
    seen = []
    loss = ppo.ppo_loss

    def spy(*a, **k):
        seen.append(a[-1] if len(a) > 10 else k.get("ent_coef"))
        return loss(*a, **k)

    monkeypatch.setattr(ppo.update, "ppo_loss", spy)  # where the update finds it
    args = args_with(
        f"runs_dir={tmp_path}",
        "run_name=ent",
        *TINY,
        "ent_coef=0.08",
        "ent_schedule=linear",
        "ent_coef_end=0.0",
    )
    ppo.Trainer(args).train()  # 4 updates of 2 epochs × 2 minibatches
    assert seen == pytest.approx([0.08] * 4 + [0.06] * 4 + [0.04] * 4 + [0.02] * 4)


def test_a_resumed_run_keeps_its_magnet(tmp_path):
    sets = [f"runs_dir={tmp_path}", "run_name=res", *TINY, "magnet=ema", "magnet_coef=0.1"]
    first = ppo.Trainer(args_with(*sets, "total_steps=1024"))
    first.train()
    saved = {k: v.clone() for k, v in first.magnet_net.state_dict().items()}
    resumed = ppo.Trainer(args_with(*sets), resume=True)
    assert resumed.update == first.update
    assert all(torch.equal(saved[k], v) for k, v in resumed.magnet_net.state_dict().items())
    assert not all(
        torch.equal(v, resumed.policy.state_dict()[k]) for k, v in saved.items()
    )  # the magnet came from the checkpoint, not from the policy


def test_exploiters_are_not_regularized(tmp_path, monkeypatch):
    seen = []
    init = ppo.Trainer.__init__

    def spy(self, args, *a, **k):
        seen.append((args.magnet_coef, args.kl_coef))
        init(self, args, *a, **k)

    monkeypatch.setattr(ppo.Trainer, "__init__", spy)
    args = args_with(
        f"runs_dir={tmp_path}",
        "run_name=x",
        *TINY,
        "total_steps=1024",
        "magnet_coef=0.1",
        "kl_coef=0.1",
        "exploiter_every=2",
        "exploiter_steps=512",
        "exploiter_eval_games=10",
    )
    ppo.Trainer(args).train()
    assert seen[0] == (0.1, 0.1) and seen[1:] and set(seen[1:]) == {(0.0, 0.0)}


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["magnet_coef=-0.1"], "magnet_coef must be >= 0, got -0.1"),
        (["kl_coef=-1"], "kl_coef must be >= 0, got -1"),
        (["ent_coef=-0.01"], "ent_coef must be >= 0, got -0.01"),
        (["magnet=teacher"], "magnet: unknown magnet 'teacher'; expected one of uniform, ema"),
        (["magnet_schedule=cosine"], "magnet_schedule: unknown schedule 'cosine'"),
        (["magnet_ema_rate=0"], "magnet_ema_rate must lie in (0, 1], got 0.0"),
        (["magnet_ema_rate=1.5"], "magnet_ema_rate must lie in (0, 1], got 1.5"),
        (["magnet_power=0"], "magnet_power must be > 0, got 0.0"),
        (["ent_schedule=cosine"], "ent_schedule: unknown schedule 'cosine'"),
        (["ent_coef_end=-0.01"], "ent_coef_end must be >= 0, got -0.01"),
    ],
)
def test_bad_regularizer_settings_are_clear_errors(sets, message, tmp_path, capsys):
    argv = ["--set", f"runs_dir={tmp_path}"] + [x for s in sets for x in ("--set", s)]
    assert train_cli.main(argv) == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
