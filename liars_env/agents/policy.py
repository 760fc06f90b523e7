"""The policy network and the checkpoint format that trained models ship in.

A checkpoint is a folder::

    model.safetensors   the network weights
    meta.json           rules, observation layout version, network shape, step, seed,
                        package versions, evaluation figures
    trainer_state.pt    (training runs only) optimizer, counters, RNG states, opponent
                        pool; loaded with ``torch.load(weights_only=True)``

Folders are written to a temporary name and renamed into place, so a crash never leaves
a half-written checkpoint behind. Loading checks everything it can and raises
:class:`CheckpointError` (a ``ValueError``) naming what is wrong: a missing or corrupt
file, other rules, another observation layout, a network shape that does not fit.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from liars_env.batched.kernels import (
    known_matches,
    own_bid_tails,
    round_wild,
    tail_table,
    wild_faces,
)
from liars_env.engine import get_codec
from liars_env.observation import OBSERVATION_VERSION, ObservationLayout
from liars_env.rules import RuleSet

FORMAT_VERSION = 1
"""Version of the checkpoint folder format."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing, corrupt or built for something else."""


class RulesMismatchError(CheckpointError):
    """A checkpoint trained under other rules than the ones asked for."""


@dataclass(frozen=True)
class NetworkShape:
    """Sizes of a :class:`PolicyNet`."""

    observation_size: int
    num_actions: int
    hidden_size: int = 256
    hidden_layers: int = 2
    bid_features: bool = False
    """Whether the network adds :class:`BidProbabilityFeatures` to its input."""
    belief_features: bool = False
    """Whether the network adds :class:`BeliefFeatures` (what the round's bids say about
    the opponents' dice) to its input. Checkpoints made before this field load with it
    off."""


class BidProbabilityFeatures(nn.Module):
    """For every bid id, the chance that it holds given only the observer's own dice.

    Computed from the observation alone (own dice, dice left, palifico flag, current
    bid), with the same binomial tails as the probabilistic bot (the same kernels of
    :mod:`liars_env.batched.kernels`); appended to the network's input as an inductive
    bias. Output: ``(B, num_bids + 2)``: one probability per bid id, then that of the
    current bid holding and of it being exact (0 before the opening bid). Meant for
    common hands (a bid about all active dice).
    """

    def __init__(self, rules: RuleSet) -> None:
        super().__init__()
        from liars_env.actions import ActionCodec

        layout = ObservationLayout(rules)
        codec = ActionCodec(rules)
        self.rules = rules
        self.slices = layout.slices
        self.dice_per_player = rules.dice_per_player
        self.register_buffer("tails", tail_table(rules, torch.float32), persistent=False)
        self.register_buffer("bid_face", torch.as_tensor(codec.bid_face.copy()), persistent=False)
        self.register_buffer(
            "bid_quantity", torch.as_tensor(codec.bid_quantity.copy()), persistent=False
        )
        self.size = codec.num_bids + 2

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Bid probabilities for a batch of observations."""
        sl, d = self.slices, self.dice_per_player
        own = (obs[:, sl["own_dice"]] * d).round().long()  # (B, F)
        total = (obs[:, sl["dice_left"]].sum(1) * d).round().long()
        unseen = (total - own.sum(1)).clamp_min(0)
        palifico = obs[:, sl["palifico"]].squeeze(1) >= 0.5
        wild_die = self.rules.wild_die
        wild = wild_faces(round_wild(self.rules, palifico), self.rules.faces, wild_die=wild_die)
        known = known_matches(own, wild, wild_die=wild_die)  # (B, F)
        holds, after = own_bid_tails(
            self.tails, known, wild, unseen, self.bid_face, self.bid_quantity
        )
        current = obs[:, sl["current_bid"]]
        p_true = (holds * current).sum(1, keepdim=True)
        p_exact = ((holds - after) * current).sum(1, keepdim=True)
        return torch.cat([holds, p_true, p_exact], dim=1)


class BeliefFeatures(nn.Module):
    """What the round's bids say about the hidden dice, as network inputs.

    From the observation alone, with :class:`liars_env.agents.belief.BeliefModel` (posteriors
    over each opponent's hand given its bids): for every bid id the chance that it
    holds, the chance that the current bid holds and that it is exact, and each
    opponent's expected dice of each face ÷ D. Output: ``(B, num_bids + 2 + (N−1)·F)``.
    """

    def __init__(self, rules: RuleSet) -> None:
        super().__init__()
        from liars_env.agents.belief import BeliefModel

        self.model = BeliefModel(rules)
        self.current = ObservationLayout(rules).slices["current_bid"]
        self.size = self.model.num_bids + 2 + (rules.num_players - 1) * rules.faces

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Belief features for a batch of observations."""
        out = self.model(obs)
        current = obs[:, self.current]
        p_true = (out.holds * current).sum(1, keepdim=True)
        p_exact = (out.exact * current).sum(1, keepdim=True)
        return torch.cat([out.holds, p_true, p_exact, out.mean_matches.flatten(1)], dim=1)


class PolicyNet(nn.Module):
    """An MLP with a masked policy head and a value head over a shared torso.

    Example:
        >>> net = PolicyNet(NetworkShape(observation_size=10, num_actions=4, hidden_size=8))
        >>> obs, mask = torch.zeros(2, 10), torch.tensor([[1, 0, 1, 0], [0, 0, 0, 1]]).bool()
        >>> logits, value = net(obs, mask)
        >>> masked_probabilities(logits)[1].tolist()
        [0.0, 0.0, 0.0, 1.0]
    """

    def __init__(self, shape: NetworkShape, rules: RuleSet | None = None) -> None:
        super().__init__()
        self.shape = shape
        self.rules = rules
        self.features = nn.ModuleList()
        width = shape.observation_size
        if (shape.bid_features or shape.belief_features) and rules is None:
            raise ValueError("a network with bid or belief features needs the rules")
        if shape.bid_features:
            self.features.append(BidProbabilityFeatures(rules))
        if shape.belief_features:
            self.features.append(BeliefFeatures(rules))
        self.features_size = sum(f.size for f in self.features)
        width += self.features_size
        layers: list[nn.Module] = []
        for _ in range(shape.hidden_layers):
            layers += [nn.Linear(width, shape.hidden_size), nn.ReLU()]
            width = shape.hidden_size
        self.torso = nn.Sequential(*layers)
        self.policy_head = nn.Linear(width, shape.num_actions)
        self.value_head = nn.Linear(width, 1)
        nn.init.orthogonal_(self.policy_head.weight, gain=0.01)
        nn.init.zeros_(self.policy_head.bias)

    @torch.no_grad()
    def input_features(self, obs: torch.Tensor) -> torch.Tensor | None:
        """The computed inputs the network adds to ``obs`` (``None`` if it adds none).

        They depend on the observation alone and carry no gradient, so a training loop
        may compute them once per sample and pass them to :meth:`forward`.
        """
        if not len(self.features):
            return None
        return torch.cat([f(obs) for f in self.features], dim=1)

    def forward(
        self, obs: torch.Tensor, mask: torch.Tensor, features: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits (illegal actions at the dtype's minimum) and values.

        Args:
            obs: ``(B, observation_size)`` observations.
            mask: ``(B, num_actions)`` bool legal actions.
            features: :meth:`input_features` of ``obs``, if already computed.
        """
        if len(self.features):
            if features is None:
                features = self.input_features(obs)
            obs = torch.cat([obs, features], dim=1)
        hidden = self.torso(obs)
        logits = self.policy_head(hidden)
        logits = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
        return logits, self.value_head(hidden).squeeze(-1)


NEW_CALL_BIAS = -2.0
"""Bias of an action :func:`transfer_weights` starts afresh, relative to a challenge's."""


def transfer_weights(source: PolicyNet, target: PolicyNet) -> list[int]:
    """Copies a trained network into one built for other rules (transfer learning).

    The two :class:`NetworkShape` may differ only in the number of actions (the
    observation sizes and bid features agree, e.g. ``perudo`` and ``perudo_palifico`` or
    ``perudo_calza`` at one table size). The policy head's rows follow the actions'
    meanings: a bid keeps its (quantity, face) row, a challenge its row; a call the
    source has no row for (an exact call) starts as the challenge's row with
    :data:`NEW_CALL_BIAS` added to its bias, so that it begins as a rarer call. The
    rule-derived tables stay the target's own.

    Args:
        source: The trained network (its ``rules`` set).
        target: A network for the new rules; its weights are overwritten.

    Returns:
        The target's action ids that had no counterpart in the source.

    Raises:
        ValueError: if the networks differ in more than the number of actions, or the
            bids of the two rule sets do not coincide.
    """
    if source.rules is None or target.rules is None:
        raise ValueError("transfer_weights needs networks built with their rules")
    if replace(source.shape, num_actions=target.shape.num_actions) != target.shape:
        raise ValueError(
            f"cannot transfer: network {source.shape} differs from {target.shape} beyond "
            "the number of actions"
        )
    src_codec, dst_codec = get_codec(source.rules), get_codec(target.rules)
    # one observation size can hold other bids (1 die each: 2 players of 6 faces, 3 of 3)
    same_bids = np.array_equal(src_codec.bid_quantity, dst_codec.bid_quantity) and np.array_equal(
        src_codec.bid_face, dst_codec.bid_face
    )
    if not same_bids:
        raise ValueError(
            f"cannot transfer: the bids differ ({src_codec.num_bids} bid ids in the "
            f"source, {dst_codec.num_bids} in the target)"
        )
    weights = source.state_dict()
    # rows[a]: the source's row for the target's action a
    rows = list(range(dst_codec.num_actions))
    rows[dst_codec.challenge] = src_codec.challenge
    fresh = []
    if dst_codec.exact is not None:
        if src_codec.exact is None:
            fresh.append(dst_codec.exact)
        rows[dst_codec.exact] = src_codec.challenge if src_codec.exact is None else src_codec.exact
    index = torch.tensor(rows, device=weights["policy_head.weight"].device)
    weights["policy_head.weight"] = weights["policy_head.weight"].index_select(0, index)
    bias = weights["policy_head.bias"].index_select(0, index).clone()
    bias[fresh] += NEW_CALL_BIAS
    weights["policy_head.bias"] = bias
    target.load_state_dict(weights)
    return fresh


def masked_probabilities(logits: torch.Tensor) -> torch.Tensor:
    """Softmax of masked logits: exactly zero on illegal actions."""
    return torch.softmax(logits, dim=-1)


def masked_entropy(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Entropy over the legal actions only (illegal ones contribute nothing)."""
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).masked_fill(~mask, 0.0).sum(-1)


def masked_kl(
    logits: torch.Tensor, magnet_logits: torch.Tensor | None, mask: torch.Tensor
) -> torch.Tensor:
    """``KL(π ‖ ρ)`` over the legal actions, per row: ``Σ π(a)·(log π(a) − log ρ(a))``.

    Args:
        logits: The policy's logits (illegal actions masked), ``(B, A)``.
        magnet_logits: The magnet's logits, masked the same way; ``None``: the uniform
            policy over the legal actions, for which the KL is ``log n_legal − entropy``.
        mask: Legal actions, ``(B, A)`` bool.

    Example:
        >>> logits = torch.tensor([[0.0, 0.0, -1e9]])
        >>> mask = torch.tensor([[True, True, False]])
        >>> round(masked_kl(logits, None, mask).item(), 6)
        0.0
        >>> magnet = torch.tensor([[0.0, 2.0, -1e9]])
        >>> masked_kl(logits, magnet, mask).item() > 0
        True
    """
    logp = torch.log_softmax(logits, dim=-1)
    if magnet_logits is None:
        log_rho = -mask.sum(-1, keepdim=True).clamp_min(1).to(logp.dtype).log()
    else:
        log_rho = torch.log_softmax(magnet_logits, dim=-1)
    return (logp.exp() * (logp - log_rho)).masked_fill(~mask, 0.0).sum(-1)


def sample_actions(
    logits: torch.Tensor, generator: torch.Generator | None = None, greedy: bool = False
) -> torch.Tensor:
    """One action per row from masked logits (the argmax when ``greedy``).

    Inverse-CDF sampling: one uniform number per row, located in the row's running sum of
    probabilities (``torch.multinomial`` draws a number per action and costs ~15× more
    here). An action of probability zero is never picked: its running sum equals its
    predecessor's, and the draw is kept strictly below the total (``u × total`` can round
    up to it), so it always lands at or before the last action of positive probability.

    Example:
        >>> logits = torch.tensor([[0.0, -1e9, 0.0], [-1e9, 5.0, -1e9]])
        >>> sample_actions(logits, torch.Generator().manual_seed(0)).tolist()[1]
        1
    """
    if greedy:
        return logits.argmax(-1)
    running = masked_probabilities(logits).cumsum(-1)
    total = running[..., -1:]
    u = torch.rand(total.shape, device=logits.device, generator=generator, dtype=total.dtype)
    below_total = torch.nextafter(total, torch.zeros_like(total))
    draw = torch.minimum(u * total, below_total)
    return torch.searchsorted(running, draw, right=True).squeeze(-1)


def package_versions() -> dict[str, str]:
    """Versions of the packages a checkpoint depends on."""
    import numpy

    from liars_env.version import __version__

    return {
        "liars_env": __version__,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
    }


def build_meta(rules: RuleSet, shape: NetworkShape, **extra: Any) -> dict[str, Any]:
    """The ``meta.json`` content for a network trained on ``rules``."""
    return {
        "format_version": FORMAT_VERSION,
        "rules": rules.to_dict(),
        "observation_version": OBSERVATION_VERSION,
        "network": asdict(shape),
        "packages": package_versions(),
        **extra,
    }


CHECKPOINT_FILES = ("model.safetensors", "meta.json", "trainer_state.pt")
"""The files :func:`write_checkpoint` writes (the trainer state only when given)."""


def write_checkpoint(
    path: str | Path,
    model: PolicyNet,
    meta: Mapping[str, Any],
    trainer_state: Mapping[str, Any] | None = None,
    keep_other_files: bool = False,
) -> Path:
    """Writes a checkpoint folder atomically (temporary folder, then rename).

    An existing folder at ``path`` is replaced only once the new one is complete.
    With ``keep_other_files`` the files it holds besides :data:`CHECKPOINT_FILES` (a
    shipped model's ``card.md``, say) are copied into the new folder; otherwise they go.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        save_file(state, str(tmp / "model.safetensors"))
        (tmp / "meta.json").write_text(json.dumps(dict(meta), indent=2))
        if trainer_state is not None:
            torch.save(dict(trainer_state), tmp / "trainer_state.pt")
        if keep_other_files and path.is_dir():
            for other in path.iterdir():
                if other.name not in CHECKPOINT_FILES:
                    copy = shutil.copytree if other.is_dir() else shutil.copy2
                    copy(other, tmp / other.name)
        for f in tmp.iterdir():  # make the bytes durable before the rename
            if f.is_file():
                with open(f, "rb") as handle:
                    os.fsync(handle.fileno())
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def read_meta(path: str | Path) -> dict[str, Any]:
    """Reads and checks a checkpoint's ``meta.json``."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(
            f"checkpoint {path} is not a folder (expected model.safetensors and meta.json)"
        )
    meta_file = path / "meta.json"
    if not meta_file.is_file():
        raise CheckpointError(f"checkpoint {path} has no meta.json")
    try:
        meta = json.loads(meta_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"checkpoint {path}: meta.json is corrupt ({exc})") from None
    for key in ("format_version", "rules", "observation_version", "network"):
        if not isinstance(meta, dict) or key not in meta:
            raise CheckpointError(f"checkpoint {path}: meta.json lacks {key!r}")
    if meta["format_version"] != FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} has format version {meta['format_version']!r}, "
            f"expected {FORMAT_VERSION!r}"
        )
    return meta


def _network_shape(path: Path, declared: Any) -> NetworkShape:
    """The :class:`NetworkShape` a ``meta.json`` declares, each field of its type."""
    if not isinstance(declared, dict):
        raise CheckpointError(f"checkpoint {path}: network in meta.json must be a mapping")
    try:
        shape = NetworkShape(**declared)
    except TypeError as exc:
        raise CheckpointError(f"checkpoint {path}: bad network shape ({exc})") from None
    for f in fields(NetworkShape):
        value = getattr(shape, f.name)
        flag = f.type in (bool, "bool")
        if flag:
            ok = isinstance(value, bool)
        else:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        if not ok:
            expected = "true or false" if flag else "an int >= 1"
            raise CheckpointError(
                f"checkpoint {path}: network.{f.name} in meta.json must be {expected}, "
                f"got {value!r}"
            )
    return shape


def load_policy(
    path: str | Path, rules: RuleSet | None = None, device: str | torch.device = "cpu"
) -> tuple[PolicyNet, dict[str, Any]]:
    """Loads a checkpoint's network, checking it against ``rules`` if given.

    Raises:
        CheckpointError: for a missing or corrupt file, other rules, another observation
            layout version, or weights that do not fit the declared network.
    """
    path = Path(path)
    meta = read_meta(path)
    try:
        trained_rules = RuleSet.from_dict(meta["rules"])
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {path}: bad rules in meta.json ({exc})") from None
    if rules is not None and trained_rules != rules:
        changed = {
            k: (v, getattr(rules, k))
            for k, v in trained_rules.to_dict().items()
            if getattr(rules, k) != v
        }
        raise RulesMismatchError(
            f"checkpoint {path} was trained for other rules: "
            + ", ".join(f"{k}={a!r} (asked for {b!r})" for k, (a, b) in changed.items())
        )
    if meta["observation_version"] != OBSERVATION_VERSION:
        raise CheckpointError(
            f"checkpoint {path} uses observation layout v{meta['observation_version']}, "
            f"this liars_env produces v{OBSERVATION_VERSION}"
        )
    shape = _network_shape(path, meta["network"])
    expected = ObservationLayout(trained_rules).size
    if shape.observation_size != expected:
        raise CheckpointError(
            f"checkpoint {path}: network input {shape.observation_size} does not match the "
            f"observation size {expected} of its rules"
        )
    weights_file = path / "model.safetensors"
    if not weights_file.is_file():
        raise CheckpointError(f"checkpoint {path} has no model.safetensors")
    try:
        weights = load_file(str(weights_file), device=str(device))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {path}: model.safetensors is corrupt ({exc})") from None
    model = PolicyNet(shape, trained_rules).to(device)
    try:
        model.load_state_dict(weights)
    except RuntimeError as exc:
        details = "; ".join(
            line.strip() for line in str(exc).splitlines()[1:] if line.strip()
        ) or str(exc)
        raise CheckpointError(
            f"checkpoint {path}: weights do not fit the network {shape} ({details})"
        ) from None
    model.eval()
    return model, meta


def load_trainer_state(path: str | Path) -> dict[str, Any]:
    """Loads ``trainer_state.pt`` with ``weights_only=True`` (never a pickle fallback)."""
    file = Path(path) / "trainer_state.pt"
    if not file.is_file():
        raise CheckpointError(f"checkpoint {path} has no trainer_state.pt (needed to resume)")
    try:
        return torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for bad files
        raise CheckpointError(f"checkpoint {path}: trainer_state.pt is corrupt ({exc})") from None
