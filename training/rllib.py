"""Train the Liar's Dice AEC env on Ray RLlib (new API stack), for runs beyond one machine.

Pieces, all small and our own:

* :class:`RLlibLiarsDiceEnv`: RLlib's ``PettingZooEnv`` over ``liars_env.env``, with the
  observation renamed the way RLlib's masking convention expects
  (``{"observations": float32[size], "action_mask": float32[num_actions]}``).
* :class:`MaskedPolicyModule`: a PPO-ready ``TorchRLModule`` around our own
  :class:`~liars_env.agents.policy.PolicyNet` (masked logits, value head), so an RLlib-trained
  policy exports straight to our checkpoint format.
* :class:`SnapshotCallback`: self-play the RLlib way: module ``main`` is trained and
  plays one seat of every game; once its win rate passes a threshold a frozen copy
  ``main_v{k}`` joins, and the other seats are drawn from the frozen copies.
* :func:`start_ray`: a local Ray bound to 127.0.0.1 with usage statistics off, or the
  cluster named by ``RAY_ADDRESS``.

Run: ``liars-train --backend rllib --config configs/rllib_perudo_3p.yaml``. On a cluster,
start the head with ``ray start --head --node-ip-address=HEAD_IP``, join workers with
``ray start --address=HEAD_IP:6379``, then run with ``RAY_ADDRESS=HEAD_IP:6379``.
"""

from __future__ import annotations

import os
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Before ray is imported: no usage statistics, and, unless we join a cluster, a node
# address of 127.0.0.1 (Ray then binds its servers to that address, not every interface).
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
if not os.environ.get("RAY_ADDRESS"):
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from ray.rllib.callbacks.callbacks import RLlibCallback  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # noqa: E402
from ray.rllib.core.rl_module.torch import TorchRLModule  # noqa: E402
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv  # noqa: E402

import liars_env  # noqa: E402
from liars_env.agents.policy import NetworkShape, PolicyNet, build_meta, write_checkpoint  # noqa: E402
from liars_env.rules import RuleSet  # noqa: E402
from liars_train.config import require_non_negative, require_positive  # noqa: E402

ENV_NAME = "liars_dice_v1"
MAIN = "main"


@dataclass
class RLlibArgs:
    """Settings of an RLlib run (``configs/rllib_*.yaml``)."""

    run_name: str = "rllib_perudo_3p"
    """Folder under ``runs_dir``."""
    runs_dir: str = "runs"
    """Where runs are written."""
    rules: str = "perudo"
    """Preset of the game."""
    num_players: int = 3
    """Seats at the table."""
    seed: int = 0
    """Seeds RLlib and the env."""
    iterations: int = 50
    """Training iterations (``algo.train()`` calls)."""
    num_env_runners: int = 0
    """Remote sampling actors (0: sample in the driver, best for one small machine)."""
    num_envs_per_env_runner: int = 8
    """Games per runner, stepped as a vector: turn-based games are short and cheap, so
    several per runner amortize the policy's forward passes."""
    rollout_fragment_length: int = 64
    """Steps per runner per sample: short, so that whole games and their final
    (elimination) rewards arrive in every batch."""
    train_batch_size: int = 4096
    """Env steps per learner update."""
    minibatch_size: int = 512
    """PPO minibatch size."""
    num_epochs: int = 4
    """PPO epochs per update."""
    lr: float = 3e-4
    """Adam learning rate."""
    entropy_coeff: float = 0.01
    """Entropy bonus."""
    hidden_size: int = 256
    """MLP width."""
    hidden_layers: int = 2
    """MLP depth."""
    bid_features: bool = True
    """Add the bid-probability features (see ``liars_env.agents.policy``)."""
    belief_features: bool = True
    """Add the belief features: what the round's bids say about the opponents' dice."""
    snapshot_win_rate: float = 0.6
    """Win rate of ``main`` over the last games that adds a frozen snapshot."""
    max_snapshots: int = 8
    """Frozen snapshots kept as opponents."""

    def validate(self) -> None:
        """Checks names and ranges (see :func:`validate`); ``ValueError`` if bad."""
        validate(self)


class RLlibLiarsDiceEnv(PettingZooEnv):
    """RLlib's PettingZoo adapter over our env, with RLlib-style masked observations.

    Args:
        config: ``{"rules": preset name or RuleSet dict, "num_players": N, ...}``.
    """

    def __init__(self, config: dict | None = None) -> None:
        config = dict(config or {})
        rules = config.pop("rules", "perudo")
        if isinstance(rules, dict):
            rules = RuleSet.from_dict(rules)
        super().__init__(liars_env.env(rules, **config))
        inner = self.env.unwrapped
        size, n = inner.layout.size, inner.codec.num_actions
        space = gym.spaces.Dict(
            {
                "observations": gym.spaces.Box(0.0, 1.0, (size,), np.float32),
                "action_mask": gym.spaces.Box(0.0, 1.0, (n,), np.float32),
            }
        )
        self.observation_spaces = {aid: space for aid in self.possible_agents}
        self.observation_space = gym.spaces.Dict(self.observation_spaces)

    @staticmethod
    def _convert(obs: dict) -> dict:
        return {
            aid: {
                "observations": o["observation"].astype(np.float32),
                "action_mask": o["action_mask"].astype(np.float32),
            }
            for aid, o in obs.items()
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Resets; observations in RLlib's masked form."""
        obs, info = super().reset(seed=seed, options=options)
        return self._convert(obs), info

    def step(self, action):
        """Steps the acting agent; observations in RLlib's masked form."""
        obs, rewards, terminateds, truncateds, infos = super().step(action)
        return self._convert(obs), rewards, terminateds, truncateds, infos


class MaskedPolicyModule(TorchRLModule, ValueFunctionAPI):
    """Our :class:`PolicyNet` as an RLlib module (``model_config`` holds its shape)."""

    def setup(self) -> None:
        """Builds the network from ``model_config``."""
        cfg = self.model_config
        rules = RuleSet.from_dict(cfg["rules"])
        space = self.observation_space["observations"]
        self.shape = NetworkShape(
            int(space.shape[0]),
            int(self.action_space.n),
            cfg.get("hidden_size", 256),
            cfg.get("hidden_layers", 2),
            cfg.get("bid_features", False),
            cfg.get("belief_features", False),
        )
        self.net = PolicyNet(self.shape, rules)

    def _forward(self, batch: dict, **kwargs) -> dict:
        obs = batch[Columns.OBS]
        logits, _ = self.net(obs["observations"], obs["action_mask"] > 0.5)
        return {Columns.ACTION_DIST_INPUTS: logits}

    def compute_values(self, batch: dict, embeddings: Any = None) -> torch.Tensor:
        """State values for PPO's advantage estimates."""
        obs = batch[Columns.OBS]
        _, value = self.net(obs["observations"], obs["action_mask"] > 0.5)
        return value


class SnapshotCallback(RLlibCallback):
    """Logs ``main``'s win rate and adds frozen snapshots of it as opponents."""

    def __init__(self, num_players: int, threshold: float = 0.6, max_snapshots: int = 8) -> None:
        super().__init__()
        self.num_players = num_players
        self.threshold = threshold
        self.max_snapshots = max_snapshots
        self.snapshots: list[str] = []

    def on_episode_end(self, *, episode, metrics_logger, **kwargs) -> None:
        """Records whether the learner seat won (its last reward is the winner's +1)."""
        learner = f"player_{learner_seat(episode.id_, self.num_players)}"
        agent_episode = episode.agent_episodes.get(learner)
        won = (
            agent_episode is not None
            and len(agent_episode) > 0
            and (agent_episode.get_rewards(-1) == 1.0)
        )
        metrics_logger.log_value("main_win_rate", float(won), window=200)

    def on_train_result(self, *, algorithm, result, **kwargs) -> None:
        """Adds a snapshot when ``main`` wins often enough."""
        result["snapshots"] = len(self.snapshots)
        win_rate = result.get("env_runners", {}).get("main_win_rate")
        if win_rate is None or win_rate < self.threshold:
            return
        module_id = f"main_v{len(self.snapshots)}"
        main_module = algorithm.get_module(MAIN)
        self.snapshots.append(module_id)
        algorithm.add_module(
            module_id=module_id,
            module_spec=RLModuleSpec.from_module(main_module),
            new_agent_to_module_mapping_fn=make_mapping(
                self.num_players, self.snapshots[-self.max_snapshots :]
            ),
        )
        algorithm.set_state(
            {"learner_group": {"learner": {"rl_module": {module_id: main_module.get_state()}}}}
        )
        result["snapshots"] = len(self.snapshots)


def learner_seat(episode_id: str, num_players: int) -> int:
    """The seat that ``main`` (the learner) plays in an episode."""
    return int.from_bytes(str(episode_id).encode()[-4:], "little") % num_players


def make_mapping(num_players: int, snapshots: list[str]):
    """Agent → module: ``main`` in the learner seat, frozen snapshots in the others.

    Until the first snapshot exists every seat plays ``main`` (parameter sharing).
    """

    def mapping(agent_id, episode, **kwargs):
        seat = int(str(agent_id).rsplit("_", 1)[1])
        if not snapshots or seat == learner_seat(episode.id_, num_players):
            return MAIN
        return random.Random(f"{episode.id_}/{agent_id}").choice(snapshots)

    return mapping


def validate(args: RLlibArgs) -> None:
    """Checks names and ranges of an RLlib configuration (``ValueError`` naming the field)."""
    RuleSet.preset(args.rules, num_players=args.num_players)  # preset and player count
    if RuleSet.preset(args.rules).hand != "common" and (args.bid_features or args.belief_features):
        raise ValueError("bid_features and belief_features assume common hands; set them to false")
    require_positive(
        args,
        (
            "iterations",
            "num_envs_per_env_runner",
            "rollout_fragment_length",
            "train_batch_size",
            "minibatch_size",
            "num_epochs",
            "hidden_size",
            "hidden_layers",
        ),
    )
    require_non_negative(args, ("num_env_runners",))
    if args.minibatch_size > args.train_batch_size:
        raise ValueError("minibatch_size must not exceed train_batch_size")


def build_algorithm_config(args: RLlibArgs):
    """The RLlib ``PPOConfig`` of a run."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.tune.registry import register_env

    rules = RuleSet.preset(args.rules, num_players=args.num_players)
    register_env(ENV_NAME, lambda cfg: RLlibLiarsDiceEnv(cfg))
    model_config = {
        "rules": rules.to_dict(),
        "hidden_size": args.hidden_size,
        "hidden_layers": args.hidden_layers,
        "bid_features": args.bid_features,
        "belief_features": args.belief_features,
    }
    return (
        PPOConfig()
        .environment(
            ENV_NAME,
            env_config={"rules": args.rules, "num_players": args.num_players},
            disable_env_checking=True,  # its random probe ignores the action mask
        )
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.num_envs_per_env_runner,
            rollout_fragment_length=args.rollout_fragment_length,
        )
        .training(
            train_batch_size_per_learner=args.train_batch_size,
            minibatch_size=args.minibatch_size,
            num_epochs=args.num_epochs,
            lr=args.lr,
            entropy_coeff=args.entropy_coeff,
            gamma=1.0,
        )
        .multi_agent(
            policies={MAIN},
            policy_mapping_fn=make_mapping(args.num_players, []),
            policies_to_train=[MAIN],
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    MAIN: RLModuleSpec(module_class=MaskedPolicyModule, model_config=model_config)
                }
            )
        )
        .callbacks(
            lambda: SnapshotCallback(args.num_players, args.snapshot_win_rate, args.max_snapshots)
        )
        .debugging(seed=args.seed)
    )


def start_ray() -> bool:
    """Starts a local Ray on 127.0.0.1 only, or joins the cluster ``RAY_ADDRESS`` names.

    The trainer's rule (:func:`liars_train.distributed.cluster.init_ray`): another Ray
    running on the machine is never joined unless ``RAY_ADDRESS`` says so.

    Returns:
        Whether this call started (or joined) Ray; ``False`` if it was running already.
    """
    from liars_train.distributed.cluster import init_ray

    return init_ray(what="liars-train --backend rllib")


def export_module(module: MaskedPolicyModule, dest: str | Path, **meta: Any) -> Path:
    """Writes an RLlib-trained ``main`` module as one of our checkpoints."""
    rules = RuleSet.from_dict(module.model_config["rules"])
    net = PolicyNet(module.shape, rules)
    net.load_state_dict(module.net.state_dict())
    return write_checkpoint(dest, net, build_meta(rules, module.shape, backend="rllib", **meta))


def train(args: RLlibArgs, progress: bool = True) -> dict[str, Any]:
    """Trains for ``args.iterations``, saves the RLlib checkpoint and exports ``main``.

    Ray is started (or joined) by :func:`start_ray` and shut down at the end if this
    call started it.
    """
    started = start_ray()
    try:
        return _train(args, progress)
    finally:
        if started:
            import ray

            ray.shutdown()


def _train(args: RLlibArgs, progress: bool) -> dict[str, Any]:
    algo = build_algorithm_config(args).build_algo()
    run_dir = Path(args.runs_dir) / args.run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    history = []
    try:
        for i in range(args.iterations):
            result = algo.train()
            runners = result.get("env_runners", {})
            row = {
                "iteration": i + 1,
                "env_steps": runners.get("num_env_steps_sampled_lifetime"),
                "main_win_rate": runners.get("main_win_rate"),
                "snapshots": result.get("snapshots"),
            }
            history.append(row)
            if progress:
                print(row)
        rllib_ckpt = algo.save_to_path(str((run_dir / "rllib_checkpoint").resolve()))
        exported = export_module(
            algo.get_module(MAIN), run_dir / "exported", iterations=args.iterations, seed=args.seed
        )
    finally:
        algo.stop()
    return {
        "history": history,
        "rllib_checkpoint": str(rllib_ckpt),
        "exported": str(exported),
        "args": asdict(args),
    }
