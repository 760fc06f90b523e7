"""Ray for the project: this machine by default, a cluster when ``RAY_ADDRESS`` names one.

:func:`init_ray` is the project's one ``ray.init`` (the trainer, the RLlib backend);
:func:`connect` starts (or joins) Ray for the trainer and checks that it has the CPUs the
rollout actors ask for; every failure is a one-line :class:`ValueError` before anything
is written. See ``docs/cluster.md``.

- **Local** (``RAY_ADDRESS`` unset): a Ray of this process's own, every server bound to
  127.0.0.1, the dashboard and usage statistics off, the machine's CPUs.
- **A cluster** (``RAY_ADDRESS=host:port``, or ``auto`` for the one ``ray start`` began on
  this machine): on the head, ``ray start --head --node-ip-address=HEAD_IP --port=6379
  --include-dashboard=false``; on every other machine, ``ray start --address=HEAD_IP:6379``;
  then ``RAY_ADDRESS=HEAD_IP:6379 liars-train --config ... --set workers=N`` on the head
  (or any node). The learner, its checkpoints and its logs stay in that process; the
  rollout actors go wherever Ray has a free CPU. Every node needs this package installed
  (the same version); the league's weights travel through Ray, not files.
"""

from __future__ import annotations

import os
import socket
from typing import Any

EXTRA = 'pip install -e ".[ray]"'
"""How to install Ray for the trainer (the ``ray`` extra)."""

CONNECT_TIMEOUT_S = 10.0
"""How long :func:`connect` tries to reach a cluster's head before it gives up."""


def require_ray(workers: int) -> Any:
    """The ``ray`` module; a :class:`ValueError` naming the extra if it is not installed."""
    try:
        import ray
    except ImportError:
        raise ValueError(
            f"workers: {workers} needs Ray, which is not installed: {EXTRA} "
            "(or set workers: 0 to train in this process)"
        ) from None
    return ray


def _check_reachable(address: str) -> None:
    """Raises ``ValueError`` unless ``address`` (``[ray://]host:port``) answers in time."""
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"RAY_ADDRESS must be host:port or ray://host:port, got {address!r}")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise ValueError(
            f"RAY_ADDRESS {address!r} is unreachable ({exc}); start the head with "
            "`ray start --head`, or unset RAY_ADDRESS to run on this machine"
        ) from None


def loopback_only() -> None:
    """Makes a local Ray bind its servers to 127.0.0.1 only.

    Ray reads ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` when it is first imported; with it
    off, a node is not meant to be joined and uses 127.0.0.1 as its address (as
    ``liars_train.rllib.start_ray`` does). Set both the variable and the flag it
    became, in case ray was imported earlier.
    """
    from ray._private import ray_constants

    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False


def init_ray(num_cpus: int | None = None, what: str = "Ray") -> bool:
    """Starts a local Ray of this process's own, or joins the cluster ``RAY_ADDRESS`` names.

    The one place the project calls ``ray.init`` (the trainer's rollout actors, the RLlib
    backend). Ray joins a cluster only when ``RAY_ADDRESS`` says so: ``host:port`` or
    ``ray://host:port`` (checked first: a one-line error if nobody answers), or ``auto``
    (the cluster started on this machine with ``ray start``). Unset, empty or ``local``:
    a new Ray of this process's own, every server bound to 127.0.0.1, the dashboard and
    usage statistics off, even when another Ray runs on the machine.

    Args:
        num_cpus: CPUs of a local Ray (default: the machine's); ignored when joining.
        what: Who asks, for the messages.

    Returns:
        Whether this call started or joined Ray (then the caller shuts it down when
        done); ``False`` if Ray was already initialized in this process.

    Raises:
        ValueError: ``RAY_ADDRESS`` malformed or unreachable.
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    if ray.is_initialized():
        return False
    address = os.environ.get("RAY_ADDRESS", "").strip()
    if address and address != "local":
        if address != "auto":
            _check_reachable(address)
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except ConnectionError as exc:
            raise ValueError(
                f"{what}: cannot join the Ray cluster at RAY_ADDRESS {address!r} ({exc}); "
                "unset RAY_ADDRESS to run on this machine"
            ) from None
        return True
    loopback_only()
    ray.init(
        address="local",
        num_cpus=num_cpus or os.cpu_count() or 1,
        include_dashboard=False,
        log_to_driver=False,
    )
    return True


def crowding_note(workers: int, cpus: int, learner_device: str, split: str = "games") -> str | None:
    """A one-line note when a CPU learner must share the machine's CPUs with the actors.

    Each rollout actor keeps one CPU busy and a CPU learner one more, so with ``workers``
    at or above the CPUs of a machine of its own the processes take turns on the cores
    (on a 2-core machine the quickstart took 203 s with ``workers: 2`` against 177 s with
    ``workers: 1``). Actors that play whole batches in turn (``split="batches"``) are
    each busy only part of the time, so up to one per CPU is no crowding. ``None`` when
    there is a core for each.

    >>> crowding_note(1, 2, "cpu") is None
    True
    >>> print(crowding_note(2, 2, "cpu"))  # doctest: +NORMALIZE_WHITESPACE
    note: workers: 2 on 2 CPUs leaves no core for the learner; workers: 1, or
    rollout_split: batches, is usually faster here
    >>> crowding_note(2, 2, "cpu", "batches") is None
    True
    """
    if learner_device != "cpu" or workers < cpus or cpus < 2:
        return None
    if split == "batches" and workers <= cpus:
        return None
    return (
        f"note: workers: {workers} on {cpus} CPUs leaves no core for the learner; "
        f"workers: {cpus - 1}, or rollout_split: batches, is usually faster here"
    )


def connect(workers: int) -> bool:
    """Starts or joins Ray (:func:`init_ray`) for ``workers`` rollout actors of one CPU each.

    Returns:
        Whether this call started Ray (then the trainer shuts it down when done).

    Raises:
        ValueError: Ray missing, ``RAY_ADDRESS`` unreachable, or fewer CPUs than
            ``workers``.
    """
    ray = require_ray(workers)
    started = init_ray(what=f"workers: {workers}")
    cpus = int(ray.cluster_resources().get("CPU", 0))
    if workers > cpus:
        if started:
            ray.shutdown()
        raise ValueError(
            f"workers: {workers} is more than the {cpus} CPUs Ray sees; expected at most "
            f"{cpus} (one CPU per rollout actor)"
        )
    return started
