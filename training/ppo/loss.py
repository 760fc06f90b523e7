"""The PPO loss and what weighs its terms: schedules, the magnet of regularized self-play.

:func:`ppo_loss` is the loss of one minibatch (clipped surrogate, value, entropy, and
magnetic mirror descent's terms); :func:`magnet_weight` and :func:`entropy_weight` give
their weights at an update; :func:`follow_ema` moves the EMA magnet after each update.
"""

from __future__ import annotations

import torch
from torch import nn

from liars_env.agents.policy import masked_entropy, masked_kl
from liars_train.ppo.settings import Args


def linear_schedule(start: float, end: float, update: int, num_updates: int) -> float:
    """``start`` at update 0, moving in a straight line to ``end`` at ``num_updates``.

    The learning rate's annealing and the ``linear`` schedules of the magnet and the entropy
    bonus.

    Example:
        >>> linear_schedule(0.4, 0.0, 0, 4), linear_schedule(0.4, 0.0, 2, 4)
        (0.4, 0.2)
    """
    share = update / num_updates
    return (1.0 - share) * start + share * end


def magnet_weight(args: Args, update: int, num_updates: int) -> float:
    """``α_t``, the magnet term's weight at update ``update`` of ``num_updates``.

    Example:
        >>> args = Args(magnet_coef=0.2, magnet_schedule="linear")
        >>> magnet_weight(args, 0, 4), magnet_weight(args, 3, 4)
        (0.2, 0.05)
        >>> magnet_weight(Args(magnet_coef=0.2, magnet_schedule="power"), 3, 4)
        0.1
    """
    if args.magnet_schedule == "linear":
        return linear_schedule(args.magnet_coef, 0.0, update, num_updates)
    if args.magnet_schedule == "power":
        return args.magnet_coef * (1.0 + update) ** -args.magnet_power
    return args.magnet_coef


def entropy_weight(args: Args, update: int, num_updates: int) -> float:
    """The entropy bonus's weight at update ``update`` of ``num_updates``.

    Example:
        >>> entropy_weight(Args(ent_coef=0.05), 3, 4)
        0.05
        >>> args = Args(ent_coef=0.05, ent_schedule="linear", ent_coef_end=0.01)
        >>> entropy_weight(args, 0, 4), round(entropy_weight(args, 3, 4), 6)
        (0.05, 0.02)
    """
    if args.ent_schedule == "linear":
        return linear_schedule(args.ent_coef, args.ent_coef_end, update, num_updates)
    return args.ent_coef


def ppo_loss(
    args: Args,
    logits: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor,
    actions: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    magnet_logits: torch.Tensor | None = None,
    alpha: float = 0.0,
    ent_coef: float | None = None,
    weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The loss of one minibatch: clipped surrogate, value, entropy and the MMD terms.

    ``loss = pg − ent_coef·H + vf_coef·v + α·KL(π_θ ‖ ρ) + kl_coef·KL(π_θ ‖ π_old)``; a
    term whose weight is 0 is not computed, so with ``α = kl_coef = 0`` this is PPO's
    loss exactly.

    With ``weights`` (decoupled PPO), ``old_logp`` is the proximal policy's (the learner
    at the update's start) and each decision's surrogate and KL terms are weighed by
    ``π_proximal/π_behaviour``: the decisions were played by an older policy, and the
    weights make their average the proximal policy's expectation.

    Args:
        args: The settings (``clip_coef``, ``ent_coef``, ``vf_coef``, ``kl_coef``).
        logits: The policy's masked logits, ``(B, A)``.
        value: The value head, ``(B,)``.
        mask: Legal actions, ``(B, A)`` bool.
        actions: The rollout's actions, ``(B,)``.
        old_logp: Their log-probabilities under the policy the trust region is centred
            on: the one that played them, or (with ``weights``) the proximal policy.
        advantages: Normalized advantages.
        returns: Value targets.
        magnet_logits: The magnet's masked logits (``None``: the uniform magnet).
        alpha: ``α_t``, the magnet term's weight now.
        ent_coef: The entropy bonus's weight now (``None``: ``args.ent_coef``).
        weights: Importance weights ``π_proximal/π_behaviour`` of the decisions, ``(B,)``
            (``None``: the batch was played by the proximal policy itself).

    Returns:
        The loss and its terms (``pg``, ``value``, ``entropy``, ``approx_kl``,
        ``ratio``; ``magnet_kl`` and ``prev_kl`` where computed).
    """
    logp_all = torch.log_softmax(logits, -1)
    new_logp = logp_all.gather(1, actions[:, None]).squeeze(1)
    log_ratio = new_logp - old_logp
    ratio = log_ratio.exp()
    pg_loss = _mean(
        torch.max(
            -advantages * ratio,
            -advantages * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef),
        ),
        weights,
    )
    v_loss = 0.5 * ((value - returns) ** 2).mean()
    entropy = masked_entropy(logits, mask).mean()
    ent_coef = args.ent_coef if ent_coef is None else ent_coef
    loss = pg_loss - ent_coef * entropy + args.vf_coef * v_loss
    terms = {"pg": pg_loss, "value": v_loss, "entropy": entropy, "ratio": ratio}
    with torch.no_grad():
        terms["approx_kl"] = _mean((ratio - 1) - log_ratio, weights)
    if alpha:
        magnet_kl = masked_kl(logits, magnet_logits, mask).mean()
        loss = loss + alpha * magnet_kl
        terms["magnet_kl"] = magnet_kl
    if args.kl_coef:
        prev_kl = _mean(ratio * log_ratio - (ratio - 1), weights)
        loss = loss + args.kl_coef * prev_kl
        terms["prev_kl"] = prev_kl
    return loss, terms


def _mean(values: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """The mean of ``values``, each weighed by ``weights`` if given (not normalized)."""
    return values.mean() if weights is None else (weights * values).mean()


@torch.no_grad()
def follow_ema(magnet: nn.Module, policy: nn.Module, rate: float) -> None:
    """Moves ``magnet``'s parameters ``rate`` of the way to ``policy``'s (an EMA step).

    Example:
        >>> a, b = nn.Linear(1, 1), nn.Linear(1, 1)
        >>> with torch.no_grad():
        ...     _ = a.weight.fill_(0.0), b.weight.fill_(1.0)
        >>> follow_ema(a, b, 0.25)
        >>> a.weight.item()
        0.25
    """
    for mine, theirs in zip(magnet.parameters(), policy.parameters(), strict=True):
        mine.lerp_(theirs, rate)
