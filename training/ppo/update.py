"""The learner's update on one :class:`~liars_train.ppo.rollout.Batch`: GAE, then PPO epochs.

:func:`advantages` computes generalized advantage estimates; :func:`ppo_update` runs
``update_epochs`` passes of shuffled minibatches through :func:`~liars_train.ppo.loss.ppo_loss`
(plus the teacher's imitation loss while kickstarting) and moves the EMA magnet. It is given
the network, its optimizer, the batch and a generator, and touches nothing else.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch
from torch import nn

from liars_env.agents.policy import PolicyNet
from liars_train.ppo.loss import follow_ema, ppo_loss
from liars_train.ppo.rollout import Batch
from liars_train.ppo.settings import Args


@torch.no_grad()
def advantages(
    batch: Batch, next_value: torch.Tensor, gamma: float, gae_lambda: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE(λ) advantages and value targets of a batch, ``(num_steps, games)`` each.

    Args:
        batch: The rollout (its rewards, dones and values).
        next_value: The value of the observation after the batch's last decision.
        gamma: The discount.
        gae_lambda: GAE's λ.

    Returns:
        ``(advantages, returns)``.
    """
    rewards, values, dones = batch.rewards, batch.values, batch.dones
    num_steps = rewards.shape[0]
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(next_value)
    for step in reversed(range(num_steps)):
        following = next_value if step == num_steps - 1 else values[step + 1]
        nonterminal = 1.0 - dones[step]
        delta = rewards[step] + gamma * following * nonterminal - values[step]
        last = delta + gamma * gae_lambda * nonterminal * last
        adv[step] = last
    return adv, adv + values


@torch.no_grad()
def proximal_terms(
    policy: PolicyNet,
    obs: torch.Tensor,
    mask: torch.Tensor,
    features: torch.Tensor | None,
    actions: torch.Tensor,
    chunk: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The network's log-probabilities of ``actions`` and its values, flat decisions.

    Taken in float32, ``chunk`` decisions at a time, before the update changes the
    network: the proximal policy of decoupled PPO.

    Returns:
        ``(logp, values)``, one entry per decision each.
    """
    logps, values = [], []
    for start in range(0, obs.shape[0], chunk):
        part = slice(start, start + chunk)
        feats = None if features is None else features[part]
        logits, value = policy(obs[part], mask[part], feats)
        logp = torch.log_softmax(logits.float(), -1)
        logps.append(logp.gather(1, actions[part, None]).squeeze(1))
        values.append(value.float())
    return torch.cat(logps), torch.cat(values)


def ppo_update(
    args: Args,
    policy: PolicyNet,
    optimizer: torch.optim.Optimizer,
    batch: Batch,
    generator: torch.Generator,
    magnet: PolicyNet | None = None,
    alpha: float = 0.0,
    ent_coef: float | None = None,
    teaching: float = 0.0,
    proximal: bool = False,
) -> dict[str, float]:
    """GAE and the clipped PPO update on one batch (+ the teacher's imitation loss).

    With ``proximal`` (a batch played by older weights: the rollout actors' ``overlap``),
    the update is decoupled PPO's: the network's log-probabilities and values of now are
    taken first (:func:`proximal_terms`), the clip and the KL to the previous policy are
    centred on them, each decision is weighed by ``π_proximal/π_behaviour``, and GAE
    bootstraps from the critic of now.

    Args:
        args: The settings (``update_epochs``, ``num_minibatches``, the loss's weights).
        policy: The network trained.
        optimizer: Its optimizer.
        batch: The rollout.
        generator: Shuffles the minibatches.
        magnet: The EMA magnet's network (``None``: the uniform magnet or none).
        alpha: The magnet term's weight now.
        ent_coef: The entropy bonus's weight now.
        teaching: The imitation weight now (0: no imitation loss).
        proximal: Centre the trust region on the network of now, not on the policy that
            played the batch (see above).

    Returns:
        The update's statistics, for TensorBoard.
    """
    device = batch.obs.device
    size = batch.size
    minibatch = size // args.num_minibatches
    with torch.no_grad():
        _, next_value = policy(batch.next_obs, batch.next_mask)
    b_obs = batch.obs.reshape(-1, batch.obs.shape[-1])
    b_feat = batch.features.reshape(-1, batch.features.shape[-1])
    has_features = b_feat.shape[-1] > 0
    b_mask = batch.mask.reshape(-1, batch.mask.shape[-1])
    b_act, b_logp = batch.actions.reshape(-1), batch.logp.reshape(-1)
    stats: dict[str, Any] = {}
    b_weight = None
    if proximal:  # the trust region's centre: the network of now
        feats = b_feat if has_features else None
        prox_logp, prox_values = proximal_terms(policy, b_obs, b_mask, feats, b_act, minibatch)
        log_weight = prox_logp - b_logp
        b_weight, b_logp = log_weight.exp(), prox_logp
        stats["behaviour_kl"] = float((b_weight - 1 - log_weight).mean())
        stats["behaviour_weight_max"] = float(b_weight.max())
        batch = dataclasses.replace(batch, values=prox_values.view_as(batch.values))
    adv_all, returns = advantages(batch, next_value, args.gamma, args.gae_lambda)
    b_adv, b_ret, b_val = adv_all.reshape(-1), returns.reshape(-1), batch.values.reshape(-1)
    b_teach = batch.teacher.reshape(-1) if teaching else None
    clipfracs, teacher_losses, agreement = [], [], []
    extra: dict[str, list[float]] = {}
    for _ in range(args.update_epochs):
        order = torch.randperm(size, device=device, generator=generator)
        for start in range(0, size, minibatch):
            idx = order[start : start + minibatch]
            feats = b_feat[idx] if has_features else None
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16_update):
                logits, value = policy(b_obs[idx], b_mask[idx], feats)
            logits, value = logits.float(), value.float()
            magnet_logits = None
            if alpha and magnet is not None:
                with torch.no_grad():
                    magnet_logits, _ = magnet(b_obs[idx], b_mask[idx], feats)
            adv = b_adv[idx]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            loss, terms = ppo_loss(
                args,
                logits,
                value,
                b_mask[idx],
                b_act[idx],
                b_logp[idx],
                adv,
                b_ret[idx],
                magnet_logits,
                alpha,
                ent_coef,
                weights=None if b_weight is None else b_weight[idx],
            )
            with torch.no_grad():
                ratio = terms["ratio"]
                clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
                for key in ("magnet_kl", "prev_kl"):
                    if key in terms:
                        extra.setdefault(key, []).append(terms[key].item())
            if b_teach is not None:
                imitation = nn.functional.cross_entropy(logits, b_teach[idx])
                loss = loss + teaching * imitation
                teacher_losses.append(imitation.item())
                agreement.append((logits.argmax(1) == b_teach[idx]).float().mean().item())
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), args.max_grad_norm)
            optimizer.step()
    if magnet is not None:
        follow_ema(magnet, policy, args.magnet_ema_rate)
    var_y = b_ret.var()
    explained = float("nan") if var_y == 0 else float(1 - (b_ret - b_val).var() / var_y)
    if b_teach is not None:
        stats["teacher_weight"] = teaching
        stats["teacher_loss"] = float(np.mean(teacher_losses))
        stats["teacher_agreement"] = float(np.mean(agreement))
    stats.update({key: float(np.mean(values)) for key, values in extra.items()})
    if args.magnet_coef:
        stats["magnet_weight"] = alpha
    return {
        **stats,
        "policy_loss": terms["pg"].item(),
        "value_loss": terms["value"].item(),
        "entropy": terms["entropy"].item(),
        "approx_kl": terms["approx_kl"].item(),
        "clipfrac": float(np.mean(clipfracs)),
        "explained_variance": explained,
        "learning_rate": optimizer.param_groups[0]["lr"],
    }
