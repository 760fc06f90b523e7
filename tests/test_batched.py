"""The batched engine, step by step against the scalar engine, on every preset it covers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import preset_grid

from liars_env import IllegalActionError, LiarsDiceGame, ObservationLayout, RuleSet
from liars_env.batched import BatchedEnv, sample_legal

# (device, backend): the torch ops on every device, numba's compiled loops on the CPU
ENGINES = [("cpu", "torch"), ("cpu", "numba")] + (
    [("cuda", "torch")] if torch.cuda.is_available() else []
)
ENGINE_IDS = [f"{device}-{backend}" for device, backend in ENGINES]
GRID = [(n, p) for n, p in preset_grid(players=(2, 3, 4, 6)) if n != "individual_hand"]


def scalar_from_batch(game, env, i, rng):
    """A scalar game state with game ``i``'s dice, dice left and first player."""
    left = env.dice_left[i].tolist()
    dice = [env.dice[i, s, : left[s]].tolist() for s in range(env.num_players)]
    return game.new_game(rng, dice=dice, dice_left=left, first_player=int(env.current_player[i]))


def run_differential(rules, device, num_envs, steps, seed, backend="auto"):
    """Steps a batch and one scalar game per slot with the same dice and actions.

    Returns the number of finished games; asserts equality at every step.
    """
    players = rules.num_players
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    env = BatchedEnv(rules, num_envs=num_envs, device=device, seed=seed, backend=backend)
    rng = np.random.default_rng(0)  # scalar engine rolls are overwritten by the batch's
    obs, mask = env.reset()
    states = [scalar_from_batch(game, env, i, rng) for i in range(num_envs)]
    gen = torch.Generator(device=device).manual_seed(seed + 1)
    games_done = 0
    for _ in range(steps):
        actions = sample_legal(mask, gen)
        obs_np, mask_np = obs.cpu().numpy(), mask.cpu().numpy()
        bids = env.current_bid.tolist()
        public = (
            env.dice_left.tolist(),
            env.current_player.tolist(),
            env.opener.tolist(),
            env.palifico.tolist(),
        )
        for i, state in enumerate(states):
            assert [col[i] for col in public] == [
                state.dice_left,
                state.current_player,
                state.opener,
                state.palifico,
            ]
            assert bids[i] == list(state.current_bid or (0, 0))
        assert_rows_equal(mask_np, [game.legal_mask(s) > 0 for s in states], "legal mask")
        expected_obs = [layout.encode(s, s.current_player) for s in states]
        assert_rows_equal(obs_np, expected_obs, "observation")
        results = [game.apply(s, a, rng) for s, a in zip(states, actions.tolist(), strict=True)]
        obs, mask, rewards, dones, info = env.step(actions)
        info = {k: v.tolist() for k, v in info.items()}
        rewards_np, dones_l = rewards.cpu().numpy(), dones.tolist()
        expected_rewards = np.zeros_like(rewards_np)
        for i, result in enumerate(results):
            assert info["called"][i] == (result is not None)
            if result is None:
                assert not dones_l[i]
                continue
            seats = lambda flags: [s for s, f in enumerate(flags) if f]  # noqa: E731
            assert info["count"][i] == result.count
            assert seats(info["lost"][i]) == sorted(result.losers)
            assert seats(info["gained"][i]) == sorted(result.gainers)
            assert seats(info["eliminated"][i]) == sorted(result.eliminated)
            expected_rewards[i, list(result.eliminated)] = -1.0 / (players - 1)
            if states[i].is_over:
                expected_rewards[i, states[i].winner] += 1.0
            assert dones_l[i] == states[i].is_over
            if states[i].is_over:
                games_done += 1
                assert info["winner"][i] == states[i].winner
                states[i] = scalar_from_batch(game, env, i, rng)
            else:
                assert info["winner"][i] == -1
                left = states[i].dice_left
                states[i].dice = [env.dice[i, s, : left[s]].tolist() for s in range(players)]
        assert_rows_equal(rewards_np, expected_rewards, "rewards", atol=1e-6)
    return games_done


def assert_rows_equal(actual: np.ndarray, expected, what: str, atol: float = 0.0) -> None:
    """``actual[i] == expected[i]`` (within ``atol``) for every slot ``i``, naming the
    first that differs."""
    expected = np.stack(expected)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    differs = np.abs(actual - expected) > atol if atol else actual != expected
    bad = np.flatnonzero(differs.reshape(len(actual), -1).any(1))
    assert not bad.size, f"{what} of slot {bad[0]}: {actual[bad[0]]} != {expected[bad[0]]}"


@pytest.mark.parametrize("device, backend", ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("name, players", GRID)
def test_differential_against_the_scalar_engine(name, players, device, backend):
    # small, fast variant for CI; the slow test below plays thousands of games
    rules = RuleSet.preset(name, num_players=players, dice_per_player=3)
    done = run_differential(rules, device, num_envs=24, steps=150, seed=players, backend=backend)
    assert done >= 10


@pytest.mark.parametrize("backend", ["torch", "numba"])
@pytest.mark.parametrize("dice", [6, 7, 10])
def test_differential_at_dice_counts_whose_values_round_differently(dice, backend):
    # count × 1/D in float64 and in float32 differ in the last bit for these D (e.g.
    # 5/6); the batched observation must still equal the scalar encoder's
    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=dice)
    assert run_differential(rules, "cpu", num_envs=16, steps=300, seed=dice, backend=backend) >= 1


def test_observations_are_float32_whatever_the_default_dtype():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        dtypes = set()
        for backend in ("torch", "numba"):
            env = BatchedEnv("perudo", num_envs=4, seed=0, backend=backend)
            obs, _ = env.reset()
            gen = torch.Generator().manual_seed(0)
            obs2, _, rewards, *_ = env.step(sample_legal(env.legal_mask(), gen))
            dtypes |= {obs.dtype, obs2.dtype, rewards.dtype}
    finally:
        torch.set_default_dtype(before)
    assert dtypes == {torch.float32}


@pytest.mark.slow
@pytest.mark.parametrize("device, backend", ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("name, players", GRID)
def test_differential_thousands_of_games(name, players, device, backend):
    rules = RuleSet.preset(name, num_players=players)
    done = run_differential(rules, device, num_envs=128, steps=1000, seed=players, backend=backend)
    assert done >= 1000 // players


STATE = ("dice", "dice_left", "current_player", "opener", "bid_id", "last_bidder",
         "round_len", "round_moves", "palifico", "had_palifico")  # fmt: skip


def state_of(env):
    return {name: getattr(env, name).clone() for name in STATE}


def assert_same(a, b, what):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), what
        for key in a:
            assert_same(a[key], b[key], f"{what}: {key}")
        return
    if isinstance(a, tuple):
        assert len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{what}[{i}]")
        return
    assert a.dtype == b.dtype and torch.equal(a, b), what


@pytest.mark.parametrize("name, players", GRID)
def test_numba_and_torch_backends_play_the_same_games(name, players):
    """Same seed, same draws: every output and every state tensor equal at every step,
    with partial steps (``active``), abandoned games and sampling from the tables."""
    envs = [
        BatchedEnv(name, num_envs=48, num_players=players, seed=players, backend=backend)
        for backend in ("torch", "numba")
    ]
    assert [env.backend for env in envs] == ["torch", "numba"]
    first = [env.reset() for env in envs]
    assert_same(first[0], first[1], "reset")
    gens = [torch.Generator().manual_seed(1) for _ in envs]
    pick = torch.Generator().manual_seed(2)
    finished = calls = 0
    for step in range(250):
        actions = [env.sample_actions(gen) for env, gen in zip(envs, gens, strict=True)]
        assert_same(actions[0], actions[1], f"step {step}: actions")
        active = torch.rand(48, generator=pick) < 0.8 if step % 3 == 0 else None
        out = [env.step(a, active=active) for env, a in zip(envs, actions, strict=True)]
        assert_same(out[0], out[1], f"step {step}: outputs")
        assert_same(state_of(envs[0]), state_of(envs[1]), f"step {step}: state")
        finished += int(out[0][3].sum())
        calls += int(out[0][4]["called"].sum())
        if step % 50 == 49:
            for env in envs:
                env.reset_games(torch.tensor([0, 5]))
            assert_same(state_of(envs[0]), state_of(envs[1]), f"step {step}: reset_games")
    assert finished >= 5 and calls >= 50


@pytest.mark.parametrize("backend", ["torch", "numba"])
def test_a_step_hands_out_new_state_tensors(backend):
    # a caller that kept env.current_player (say, as the actors of the step it is about to
    # take) still reads the state before the step, whichever backend runs it
    env = BatchedEnv("perudo", num_envs=16, seed=0, backend=backend)
    _, mask = env.reset()
    names = ("current_player", "dice_left", "bid_id", "last_bidder")
    kept = {name: getattr(env, name) for name in names}
    copies = {name: t.clone() for name, t in kept.items()}
    env.step(sample_legal(mask, torch.Generator().manual_seed(0)))
    for name, tensor in kept.items():
        assert torch.equal(tensor, copies[name]), name
    assert not torch.equal(env.current_player, copies["current_player"])


def test_sample_legal_only_picks_legal_actions_and_covers_them():
    mask = torch.zeros((4, 10), dtype=torch.bool)
    mask[0, [1, 5, 9]] = True
    mask[1, 0] = True
    mask[2, :] = True
    mask[3, [3, 4]] = True
    gen = torch.Generator().manual_seed(0)
    seen = [set() for _ in range(4)]
    for _ in range(300):
        a = sample_legal(mask, gen)
        assert mask[torch.arange(4), a].all()
        for i, x in enumerate(a.tolist()):
            seen[i].add(x)
    assert seen == [{1, 5, 9}, {0}, set(range(10)), {3, 4}]


def test_sample_legal_runs_on_one_thread_and_restores_the_setting(monkeypatch):
    # Under torch's default (all cores) a busy core stalls every op at OpenMP barriers;
    # sample_legal runs on the engine's one thread and leaves the caller's setting.
    seen = []
    searchsorted = torch.searchsorted

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return searchsorted(*args, **kwargs)

    monkeypatch.setattr(torch, "searchsorted", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        mask = torch.tensor([[False, True, True], [False, False, False]])
        actions = sample_legal(mask, torch.Generator().manual_seed(0))
        assert torch.get_num_threads() == 2
        sample_legal(mask, torch.Generator().manual_seed(0), threads=None)
    finally:
        torch.set_num_threads(before)
    assert seen == [1, 2]
    assert actions[0].item() in (1, 2) and actions[1].item() == 0  # no legal action: 0


@pytest.mark.parametrize("name, players", [(n, p) for n, p in GRID if p in (2, 6)])
def test_sample_actions_draws_what_sample_legal_draws_from_the_mask(name, players):
    # the same generator state gives the same actions (the rank-th legal one), so the
    # tables behind sample_actions hold exactly the mask's legal actions in id order
    env = BatchedEnv(name, num_envs=96, num_players=players, dice_per_player=2, seed=5)
    env.reset()
    tables, mask_draws, rows = torch.Generator(), torch.Generator(), torch.tensor([0, 7, 95])
    palifico_seen = False
    for step in range(150):
        tables.manual_seed(step)
        mask_draws.manual_seed(step)
        actions = env.sample_actions(tables)
        assert torch.equal(actions, sample_legal(env.legal_mask(), mask_draws))
        assert torch.equal(
            env.sample_actions(tables, rows=rows), sample_legal(env.legal_mask()[rows], mask_draws)
        )
        palifico_seen |= bool(env.palifico.any())
        env.step(actions)
    assert palifico_seen == env.rules.palifico


def test_sample_actions_is_uniform_and_falls_back_to_the_mask_for_large_tables():
    env = BatchedEnv("perudo", num_envs=4000, seed=0)
    env.reset()
    env.step(torch.full((4000,), env.codec.encode_bid(13, 6)))  # few raises remain
    legal = env.legal_mask()[0].nonzero().squeeze(1)
    counts = torch.bincount(env.sample_actions(torch.Generator().manual_seed(0)))
    assert set(counts.nonzero().squeeze(1).tolist()) == set(legal.tolist())
    expected = 4000 / len(legal)
    assert ((counts[legal] - expected).abs() < 5 * expected**0.5).all()
    big = BatchedEnv("perudo", num_envs=8, seed=0)
    big.SAMPLER_TABLE_LIMIT = 10  # too small for any table: the mask is used
    big.reset()
    assert big.sampler_tables is None
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    assert torch.equal(big.sample_actions(g1), sample_legal(big.legal_mask(), g2))


@pytest.mark.parametrize("name", ["perudo", "perudo_palifico", "perudo_calza", "sanford"])
def test_is_legal_agrees_with_the_mask_at_every_action(name):
    env = BatchedEnv(name, num_envs=64, seed=3)
    obs, mask = env.reset()
    gen = torch.Generator().manual_seed(0)
    palifico_seen = False
    for _ in range(120):
        palifico_seen |= bool(env.palifico.any())
        for action in [-1, *range(env.num_actions), env.num_actions, 10**6]:
            legal = env.is_legal(torch.full((64,), action))
            expected = (
                mask[:, action]
                if 0 <= action < env.num_actions
                else torch.zeros(64, dtype=torch.bool)
            )
            assert torch.equal(legal, expected), action
        obs, mask, *_ = env.step(sample_legal(mask, gen))
    assert palifico_seen == env.rules.palifico


@pytest.mark.parametrize("backend", ["torch", "numba"])
def test_illegal_actions_raise_and_change_nothing(backend):
    env = BatchedEnv("perudo", num_envs=4, seed=0, backend=backend)
    _, mask = env.reset()
    env.step(sample_legal(mask, torch.Generator().manual_seed(0)))
    before = state_of(env)
    legal = env.sample_actions(torch.Generator().manual_seed(1))
    for game, bad in [(0, -1), (2, 10**6), (3, env.codec.encode_bid(1, 2))]:
        actions = legal.clone()
        actions[game] = bad
        with pytest.raises(IllegalActionError, match=f"game {game}: action {bad} is not legal"):
            env.step(actions)
        assert_same(state_of(env), before, f"after action {bad}")
    inactive = torch.tensor([True, True, False, True])
    actions = legal.clone()
    actions[2] = -1  # an inactive game's action is ignored
    env.step(actions, active=inactive)
    if backend == "numba":  # unchecked, ids that would index outside the tables raise
        unchecked = BatchedEnv("perudo", num_envs=4, seed=0, backend=backend, check_actions=False)
        unchecked.reset()
        with pytest.raises(IndexError, match="negative action id"):
            unchecked.step(torch.full((4,), -1000))
        bid = unchecked.codec.encode_bid(1, 2)
        unchecked.step(torch.full((4,), bid))
        for _ in range(unchecked.codec.num_bids):  # repeat a bid until the history is full
            try:
                unchecked.step(torch.full((4,), bid))
            except IndexError as exc:
                assert "repeated a bid" in str(exc)
                break
        else:
            raise AssertionError("a round of repeated bids never overflowed")
    fresh = BatchedEnv("perudo", num_envs=4, seed=0, backend=backend)
    fresh.reset()
    with pytest.raises(IllegalActionError, match="game 0: action 90 is not legal"):
        fresh.step(torch.full((4,), fresh.codec.challenge))  # no opening challenge


@pytest.mark.parametrize("backend", ["torch", "numba"])
def test_bad_rows_and_active_masks_raise_and_change_nothing(backend):
    env = BatchedEnv("perudo", num_envs=4, seed=0, backend=backend)
    _, mask = env.reset()
    actions = sample_legal(mask, torch.Generator().manual_seed(0))
    before, generator = state_of(env), env.generator.get_state()
    bad_rows = [
        (torch.tensor([4]), "rows must lie in \\[0, 4\\), got \\[4\\]"),
        (torch.tensor([-1]), "rows must lie in \\[0, 4\\)"),
        (torch.tensor([10**9]), "rows must lie in \\[0, 4\\)"),
        (torch.tensor([True, False]), "a bool rows mask must have shape \\(4,\\), got \\(2,\\)"),
        (torch.tensor([[0, 1]]), "rows must be a 1-D integer or bool tensor"),
        (torch.tensor([0.0]), "rows must be a 1-D integer or bool tensor"),
    ]
    for rows, message in bad_rows:
        with pytest.raises(ValueError, match=message):
            env.reset_games(rows)
    for active in (torch.tensor([True]), torch.tensor(True), torch.ones(5, dtype=torch.bool)):
        with pytest.raises(ValueError, match="active must have shape \\(4,\\)"):
            env.step(actions, active=active)
    assert_same(state_of(env), before, "after bad input")
    assert torch.equal(env.generator.get_state(), generator)  # no dice were drawn
    env.reset_games(torch.tensor([1, 3], dtype=torch.int32))  # any integer dtype
    assert (env.bid_id[[1, 3]] == -1).all() and (env.round_len[[1, 3]] == 0).all()


def test_auto_falls_back_to_torch_without_numba(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "liars_env.batched.fused", None)  # importing it now fails
    assert BatchedEnv("perudo", num_envs=2).backend == "torch"
    with pytest.raises(ImportError, match="backend='numba' needs numba"):
        BatchedEnv("perudo", num_envs=2, backend="numba")


def test_backend_choice_and_errors():
    assert BatchedEnv("perudo", num_envs=2).backend == "numba"  # auto, on the CPU
    assert BatchedEnv("perudo", num_envs=2, backend="torch").backend == "torch"
    expected = "backend must be one of 'auto', 'torch', 'numba', got 'jax'"
    with pytest.raises(ValueError, match=expected):
        BatchedEnv("perudo", num_envs=2, backend="jax")
    with pytest.raises(ValueError, match="backend='numba' runs on the CPU only, got device meta"):
        BatchedEnv("perudo", num_envs=2, backend="numba", device="meta")


def test_bad_arguments():
    env = BatchedEnv("perudo", num_envs=4, seed=0)
    env.reset()
    with pytest.raises(ValueError, match="actions must have shape \\(4,\\)"):
        env.step(torch.zeros(3, dtype=torch.long))
    before = env.observe().clone()
    for bad in (torch.tensor([7.9, 8.2, 7.0, 8.0]), torch.ones(4, dtype=torch.bool)):
        with pytest.raises(TypeError, match="actions must be integer action ids"):
            env.step(bad)
        with pytest.raises(TypeError, match="actions must be integer action ids"):
            env.is_legal(bad)
    assert torch.equal(env.observe(), before)
    with pytest.raises(ValueError, match="hand='individual'"):
        BatchedEnv("individual_hand", num_envs=4)
    with pytest.raises(ValueError, match="num_envs must be a positive int"):
        BatchedEnv("perudo", num_envs=0)


def test_same_seed_same_games():
    def run(seed):
        env = BatchedEnv("perudo_calza", num_envs=16, seed=seed)
        obs, mask = env.reset()
        gen = torch.Generator().manual_seed(0)
        total = torch.zeros(16, 3)
        for _ in range(200):
            obs, mask, rewards, dones, _ = env.step(sample_legal(mask, gen))
            total += rewards
        return obs, total

    a, b, c = run(3), run(3), run(4)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])
    assert torch.allclose(a[1].sum(1), torch.zeros(16), atol=1e-5)  # zero-sum


BOT_GRID = [
    (name, players, bot)
    for name, players in GRID
    if players in (2, 3)
    for bot in ("probabilistic", "bayes", "belief")
] + [
    # cautious and bold are the probabilistic bot with other settings: its code path runs
    # on every table above, theirs on perudo, the calza exact call and a sanford table
    (name, players, bot)
    for name, players in (("perudo", 3), ("perudo_calza", 2), ("sanford_flexible", 3))
    for bot in ("cautious", "bold")
]


@pytest.mark.parametrize("name, players, bot", BOT_GRID)
def test_batched_bot_matches_the_scalar_bot(name, players, bot):
    assert_bots_agree(RuleSet.preset(name, num_players=players), bot)


@pytest.mark.parametrize(
    "spec, name, players",
    [
        ("belief:challenge_threshold=0.62,exact_threshold=0.2", "perudo", 3),
        ("bayes:challenge_threshold=0.38,evidence=0.5", "perudo_calza", 2),
        ("probabilistic:exact_threshold=0.15", "sanford", 3),
    ],
)
def test_batched_bot_with_settings_matches_the_scalar_bot(spec, name, players):
    """A preset with settings changed (``NAME:key=value``) is the same bot in both forms."""
    from liars_env.agents.batched import make_batched_bot

    env = BatchedEnv(RuleSet.preset(name, num_players=players), num_envs=4)
    preset = spec.partition(":")[0]
    assert make_batched_bot(env, spec).params != make_batched_bot(env, preset).params
    assert_bots_agree(RuleSet.preset(name, num_players=players), spec)


def assert_bots_agree(rules, bot):
    """The batched bot ``bot`` makes the scalar bot's move in every game, for 60 steps."""
    import dataclasses

    from liars_env.agents import make_agent, view_of
    from liars_env.agents.batched import make_batched_bot

    players = rules.num_players
    env = BatchedEnv(rules, num_envs=32, seed=1)
    batched = make_batched_bot(env, bot)
    scalar = make_agent(bot, rules)
    assert batched.params == scalar.params  # both read the spec alike
    assert type(batched).__name__.lower().find(type(scalar).__name__[:5].lower()) >= 0
    batched.params = scalar.params = dataclasses.replace(batched.params, bluff_rate=0.0)
    game, layout = LiarsDiceGame(rules), ObservationLayout(rules)
    rng = np.random.default_rng(0)
    obs, mask = env.reset()
    states = [scalar_from_batch(game, env, i, rng) for i in range(32)]
    gen = torch.Generator().manual_seed(2)
    for step in range(60):
        rows = torch.arange(32)
        chosen = batched.act(mask, rows)
        for i, state in enumerate(states):
            assert int(chosen[i]) == scalar.act(view_of(game, layout, state)), (step, i)
        # mix in random moves so that the bots meet every kind of situation
        actions = torch.where(torch.rand(32, generator=gen) < 0.5, chosen, sample_legal(mask, gen))
        for s, a in zip(states, actions.tolist(), strict=True):
            game.apply(s, a, rng)
        obs, mask, _, dones, info = env.step(actions)
        for i in range(32):
            if dones[i]:
                states[i] = scalar_from_batch(game, env, i, rng)
            elif info["called"][i]:
                left = states[i].dice_left
                states[i].dice = [env.dice[i, s, : left[s]].tolist() for s in range(players)]


def test_partial_steps_leave_inactive_games_alone():
    env = BatchedEnv("perudo", num_envs=8, seed=0)
    obs, mask = env.reset()
    gen = torch.Generator().manual_seed(0)
    active = torch.tensor([True, False] * 4)
    before = (env.dice.clone(), env.current_player.clone(), obs.clone())
    obs2, mask2, rewards, dones, info = env.step(sample_legal(mask, gen), active=active)
    assert torch.equal(env.dice[~active], before[0][~active])
    assert torch.equal(env.current_player[~active], before[1][~active])
    assert torch.equal(obs2[~active], before[2][~active])
    assert not torch.equal(env.current_player[active], before[1][active])
    env.reset_games(torch.tensor([0, 2]))
    assert (env.bid_id[[0, 2]] == -1).all() and (env.dice_left[[0, 2]] == 5).all()


@pytest.mark.parametrize("bot", ["probabilistic", "bayes"])
def test_batched_bot_tie_break_at_the_challenge_threshold(bot):
    """As the scalar test: ``p_true == challenge_threshold`` (0.5) raises, above challenges.

    One die each, four faces: after the opener's "one 2", a responder holding a 3 sees
    ``p_true = 0.5`` and a certain raise to "one 3".
    """
    import dataclasses

    from liars_env.agents.batched import make_batched_bot

    rules = RuleSet.preset("perudo", num_players=2, dice_per_player=1, faces=4)
    env = BatchedEnv(rules, num_envs=64, seed=0)
    obs, mask = env.reset()
    one_two = env.codec.encode_bid(1, 2)
    obs, mask, _, _, _ = env.step(torch.full((64,), one_two))
    rows = torch.nonzero(env.dice[torch.arange(64), env.current_player, 0] == 3).squeeze(1)
    assert len(rows) > 0
    batched = make_batched_bot(env, bot)
    params = dataclasses.replace(batched.params, bluff_rate=0.0)
    if bot == "bayes":
        params = dataclasses.replace(params, evidence=0.0, counter_evidence=0.0)
    batched.params = params
    assert (batched.act(mask, rows, obs) == env.codec.encode_bid(1, 3)).all()
    batched.params = dataclasses.replace(params, challenge_threshold=0.500001)
    assert (batched.act(mask, rows, obs) == env.codec.challenge).all()


@pytest.mark.parametrize("backend", ["torch", "numba"])
@pytest.mark.parametrize("players", [2, 3, 5])
@pytest.mark.parametrize("palifico", [False, True], ids=["jokers", "jokers+palifico"])
def test_jokers_differential_at_two_three_and_five_players(players, palifico, backend):
    # bids on ones (the lowest ids) and jokers at every reveal, scalar against batched
    rules = RuleSet.preset("jokers", num_players=players, dice_per_player=3, palifico=palifico)
    done = run_differential(rules, "cpu", num_envs=24, steps=200, seed=players, backend=backend)
    assert done >= 8


@pytest.mark.parametrize("backend", ["torch", "numba"])
def test_jokers_bids_on_ones_open_and_rank_lowest_in_the_batch(backend):
    env = BatchedEnv("jokers", num_envs=3, num_players=2, seed=0, backend=backend)
    _, mask = env.reset()
    codec = env.codec
    one_one, three_ones, three_sixes = (codec.encode_bid(*b) for b in [(1, 1), (3, 1), (3, 6)])
    assert mask[:, one_one].all() and not mask[:, codec.challenge].any()  # "one 1" opens
    _, mask, *_ = env.step(torch.tensor([one_one, three_ones, three_sixes]))
    assert mask[0, one_one + 1 :].all() and not mask[0, : one_one + 1].any()
    assert mask[1, codec.encode_bid(3, 2)] and not mask[1, codec.encode_bid(2, 6)]
    assert mask[2, codec.encode_bid(4, 1)] and not mask[2, three_ones]
    before = state_of(env)
    actions = torch.tensor([codec.challenge, codec.challenge, three_ones])
    with pytest.raises(IllegalActionError, match=f"game 2: action {three_ones} is not legal"):
        env.step(actions)  # three 1s after three 6s: ones rank below every face
    assert_same(state_of(env), before, "after the illegal bid")
