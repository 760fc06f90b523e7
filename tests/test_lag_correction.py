"""Decoupled PPO: a batch played by older weights is updated with the trust region of now.

With ``workers`` and ``overlap`` each batch was played by the weights of one update
before (the behaviour policy). ``lag_correction: decoupled`` centres the clip and the KL
to the previous policy on the network at the update's start (the proximal policy) and
weighs each decision by ``π_proximal/π_behaviour``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_regularized import minibatch

from liars_env.agents.policy import PolicyNet
from liars_env.batched import BatchedEnv
from liars_train import ppo
from liars_train.ppo.rollout import Rollout, league_for
from liars_train.ppo.settings import game_rules, network_shape
from liars_train.ppo.update import proximal_terms

SETS = [
    "rules=perudo",
    "num_players=2",
    "rule_overrides={dice_per_player: 1}",
    "num_envs=32",
    "num_steps=8",
    "num_minibatches=1",
    "update_epochs=1",
    "hidden_size=32",
    "self_play=1.0",
    "league=[]",
    "pool_size=0",
    "clip_coef=0.05",
    "kl_coef=0.1",
    "torch_threads=1",
]


def setup(*sets: str):
    """Settings, a policy and a batch it played (self-play on perudo 1×6)."""
    args = ppo.load_args(None, [*SETS, *sets])
    torch.manual_seed(0)
    env = BatchedEnv(game_rules(args), num_envs=args.num_envs, seed=0, check_actions=False)
    policy = PolicyNet(network_shape(args, env), env.rules)
    generator = torch.Generator().manual_seed(0)
    league = league_for(args, env, np.random.default_rng(0), generator)
    rollout = Rollout(env, league, generator)
    rollout.start(policy)
    return args, policy, rollout.collect(policy, args.num_steps)


def moved(policy: PolicyNet, scale: float = 0.3) -> PolicyNet:
    """A copy of ``policy`` with every weight nudged (the learner one update later)."""
    other = PolicyNet(policy.shape, policy.rules)
    other.load_state_dict(policy.state_dict())
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(scale * torch.randn(p.shape, generator=gen))
    return other


def update(args, policy, batch, proximal: bool, lr: float = 0.0) -> dict[str, float]:
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr, eps=1e-5)
    gen = torch.Generator().manual_seed(2)
    return ppo.ppo_update(args, policy, optimizer, batch, gen, proximal=proximal)


def test_weights_of_one_are_the_plain_loss_exactly():
    batch, _ = minibatch(seed=7)
    args = ppo.load_args(None, ["kl_coef=0.2", "clip_coef=0.1"])
    plain, plain_terms = ppo.ppo_loss(args, **batch)
    ones = torch.ones_like(batch["old_logp"])
    weighted, terms = ppo.ppo_loss(args, **batch, weights=ones)
    assert torch.equal(plain, weighted)
    assert torch.equal(plain_terms["prev_kl"], terms["prev_kl"])


def test_the_weights_scale_each_decisions_surrogate_and_kl():
    batch, _ = minibatch(seed=8)
    args = ppo.load_args(None, ["kl_coef=0.3", "clip_coef=0.1", "ent_coef=0", "vf_coef=0"])
    weights = torch.rand(batch["old_logp"].shape, generator=torch.Generator().manual_seed(3))
    loss, terms = ppo.ppo_loss(args, **batch, weights=weights)
    logp = torch.log_softmax(batch["logits"], -1).gather(1, batch["actions"][:, None])
    log_ratio = logp.squeeze(1) - batch["old_logp"]
    ratio, adv = log_ratio.exp(), batch["advantages"]
    pg = (weights * torch.max(-adv * ratio, -adv * ratio.clamp(0.9, 1.1))).mean()
    kl = (weights * (ratio * log_ratio - (ratio - 1))).mean()
    torch.testing.assert_close(terms["pg"], pg)
    torch.testing.assert_close(terms["prev_kl"], kl)
    torch.testing.assert_close(loss, pg + 0.3 * kl)


def test_the_proximal_terms_are_the_networks_of_now():
    args, policy, batch = setup()
    obs, mask = batch.obs.flatten(0, 1), batch.mask.flatten(0, 1)
    actions = batch.actions.flatten()
    logp, values = proximal_terms(policy, obs, mask, None, actions, chunk=50)  # 256 = 5×50+6
    torch.testing.assert_close(logp, batch.logp.reshape(-1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(values, batch.values.reshape(-1), rtol=1e-5, atol=1e-5)


def test_a_stale_batch_is_clipped_around_the_weights_of_now():
    """Against the stored log-probabilities the first minibatch is already clipped; centred
    on the learner of now, nothing is clipped before the first step."""
    args, behaviour, batch = setup()
    learner = moved(behaviour)
    stale = update(args, moved(behaviour), batch, proximal=False)
    decoupled = update(args, learner, batch, proximal=True)
    assert stale["clipfrac"] > 0.3
    assert stale["approx_kl"] > 0.01
    assert decoupled["clipfrac"] == 0.0
    assert abs(decoupled["approx_kl"]) < 1e-6
    assert decoupled["behaviour_kl"] > 0.01  # how far the behaviour policy lags
    assert decoupled["behaviour_weight_max"] > 1.0


def test_a_fresh_batch_updates_as_without_the_correction():
    """Played by the learner itself, the weights are 1 and the values its own: the same step."""
    args, policy, batch = setup()
    plain, corrected = moved(policy, 0.0), moved(policy, 0.0)
    first = update(args, plain, batch, proximal=False, lr=1e-3)
    second = update(args, corrected, batch, proximal=True, lr=1e-3)
    assert second["behaviour_kl"] < 1e-6
    assert second["behaviour_weight_max"] == pytest.approx(1.0, abs=1e-4)
    assert first["clipfrac"] == pytest.approx(second["clipfrac"])
    mine = corrected.state_dict()
    for name, weight in plain.state_dict().items():
        torch.testing.assert_close(weight, mine[name], rtol=1e-4, atol=1e-6, msg=name)


def test_an_unknown_correction_is_a_clear_error():
    with pytest.raises(ValueError, match="lag_correction: unknown correction 'vtrace'"):
        ppo.load_args(None, ["lag_correction=vtrace"])
