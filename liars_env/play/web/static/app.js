// Liar's Dice web table. Renders the server's JSON and submits action ids; all game
// state lives on the server. Plain JavaScript, no build step, no external resources.
"use strict";

const S = {
  config: null,
  mode: null,        // "play" | "watch" | "replay"
  view: null,        // the latest game view (play / watch)
  events: [],        // every event of the game so far
  timer: null,
  paused: false,
  busy: false,
  delay: Number(localStorage.getItem("liars.delay") || 0) || null,
  showAll: localStorage.getItem("liars.showAll") === "1",
  replay: null,
  frame: 0,
  finalClosed: false, // the result box was closed (until the next game, or the replay leaves the end)
  finalReturn: null,  // where keyboard focus goes back to when the result box closes
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// ----------------------------------------------------------------------------- server
async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let data = null;
  try {
    data = await response.json();
  } catch (e) {
    data = { error: `the server answered ${response.status} without JSON` };
  }
  if (!response.ok) {
    const error = new Error(data.error || `HTTP ${response.status}`);
    error.status = response.status;
    error.data = data;
    throw error;
  }
  return data;
}

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

// ----------------------------------------------------------------------------- dice
function die(face, opts) {
  const o = opts || {};
  const classes = ["die"];
  if (face === null) classes.push("hidden-die");
  if (o.match) classes.push("match");
  if (o.wild) classes.push("wild");
  if (o.dim) classes.push("dim");
  const label = face === null ? "hidden die" : `${face}${o.wild ? " (wild)" : ""}${o.match ? " counted" : ""}`;
  return el("span", { class: classes.join(" "), "aria-label": label, title: label, dataset: { face: face === null ? "" : face } },
    face === null ? "?" : String(face), o.wild ? el("sup", { text: "★" }) : null);
}

function ordinal(n) {
  const s = ["th", "st", "nd", "rd"], v = n % 100;
  return n + (s[(v - 20) % 10] || s[v] || s[0]);
}

// ----------------------------------------------------------------------------- table
function renderTable(table, opts) {
  const box = $("table");
  box.querySelectorAll(".seat").forEach((n) => n.remove());
  const n = table.seats.length;
  const bottom = opts.you === null || opts.you === undefined ? 0 : opts.you;
  const reveal = opts.lastReveal;
  const freshReveal = reveal && table.bids.length === 0;
  for (const seat of table.seats) {
    const k = (seat.seat - bottom + n) % n;
    const angle = Math.PI / 2 + (2 * Math.PI * k) / n;  // the person (or seat 0) at the bottom
    const x = 50 + 40 * Math.cos(angle), y = 50 + 38 * Math.sin(angle);
    const show = seat.dice !== null && (opts.showAll || seat.seat === opts.you);
    const dice = [];
    for (let i = 0; i < seat.dice_left; i++) dice.push(die(show && i < seat.dice.length ? seat.dice[i] : null));
    const badges = [];
    if (table.current_player === seat.seat) badges.push(el("span", { class: "badge turn", text: "to act" }));
    if (seat.out) badges.push(el("span", { class: "badge out", text: "out" }));
    if (seat.place !== null && (seat.out || table.over)) badges.push(el("span", { class: "badge place", text: ordinal(seat.place) }));
    if (freshReveal && reveal.losers.includes(seat.seat)) badges.push(el("span", { class: "badge lost", text: "−1 die" }));
    if (freshReveal && reveal.gainers.includes(seat.seat)) badges.push(el("span", { class: "badge gained", text: "+1 die" }));
    if (table.opener === seat.seat && !table.over) badges.push(el("span", { class: "badge opener", text: "opened" }));
    const classes = ["seat"];
    if (table.current_player === seat.seat) classes.push("acting");
    if (seat.out) classes.push("is-out");
    if (seat.seat === opts.you) classes.push("you");
    box.append(el("div", {
      class: classes.join(" "),
      style: `--x:${x.toFixed(1)}%;--y:${y.toFixed(1)}%`,
      id: `seat-${seat.seat}`,
      dataset: { seat: seat.seat, diceLeft: seat.dice_left },
    },
    el("div", { class: "seat-name" }, seat.name),
    el("div", { class: "seat-dice" }, dice.length ? dice : el("span", { class: "muted", text: "no dice" })),
    el("div", { class: "seat-meta" }, `${seat.dice_left} ${seat.dice_left === 1 ? "die" : "dice"}`, ...badges)));
  }
  const centre = $("centre");
  centre.replaceChildren();
  centre.append(el("div", { class: "round" }, `Round ${table.round + 1}`, table.palifico ? el("span", { class: "badge palifico", text: "palifico" }) : null));
  if (table.over) {
    const winner = table.seats[table.winner];
    centre.append(el("div", { class: "current-bid" }, `${winner.name} ${winner.name === "you" ? "win" : "wins"}`));
  } else if (table.bids.length) {
    const last = table.bids[table.bids.length - 1];
    centre.append(el("div", { class: "current-bid", id: "current-bid" }, last.text),
      el("div", { class: "muted" }, `by ${table.seats[last.seat].name}`));
  } else {
    centre.append(el("div", { class: "current-bid muted" }, "no bid yet"));
  }
  centre.append(el("div", { class: "muted" }, `${table.total_dice} ${table.total_dice === 1 ? "die" : "dice"} in play`));
}

function renderBids(table) {
  const box = $("bids");
  box.replaceChildren(el("h2", { text: `Bids this round (${table.bids.length})` }));
  if (!table.bids.length) {
    box.append(el("p", { class: "muted", text: table.over ? "Game over." : "No bids yet." }));
    return;
  }
  box.append(el("ol", { id: "bid-list" }, table.bids.map((b) =>
    el("li", {}, el("strong", { text: table.seats[b.seat].name }), ` bids ${b.text}`))));
}

function renderReveal(reveal, table) {
  const box = $("reveal");
  box.replaceChildren();
  if (!reveal) return;
  const name = (s) => table.seats[s].name;
  box.append(el("h2", { text: "Last reveal" }),
    el("p", { class: "reveal-title" }, `${name(reveal.caller)}: ${reveal.call_text} on ${name(reveal.bidder)}'s ${reveal.bid_text}`));
  const hands = el("div", { class: "hands" });
  for (const hand of reveal.hands) {
    hands.append(el("div", { class: "hand" + (hand.counted ? "" : " not-counted") },
      el("span", { class: "hand-name", text: name(hand.seat) }),
      el("span", { class: "hand-dice" }, hand.dice.map((d) => die(d.face, { match: d.match, wild: d.wild, dim: !hand.counted })))));
  }
  box.append(hands);
  box.append(el("p", { class: "count", id: "reveal-count" }, `Count of ${reveal.bid[1]}s: ${reveal.count} (bid ${reveal.bid[0]})`,
    reveal.palifico ? " — palifico: ones not wild" : ""));
  box.append(el("ul", { class: "outcome" }, reveal.outcome.map((line) => el("li", { text: line }))));
}

function renderEvent(event, table, label) {
  const box = $("event");
  box.replaceChildren();
  if (!event) return;
  const who = table.seats[event.seat].name;
  box.append(el("h2", { text: label || "Last move" }),
    el("p", { id: "event-text" }, el("strong", { text: who }), `: ${event.text}`));
  if (event.probs && event.probs.length) {
    const list = el("ul", { class: "probs", "aria-label": `${who}'s action probabilities` });
    for (const p of event.probs) {
      list.append(el("li", { class: p.action === event.action ? "chosen" : "" },
        el("span", { class: "prob-text", text: p.text }),
        el("span", { class: "bar", style: `--p:${(100 * p.p).toFixed(1)}%` }),
        el("span", { class: "prob-value", text: `${(100 * p.p).toFixed(1)}%` })));
    }
    box.append(el("p", { class: "muted", text: "The agent's probabilities at this move:" }), list);
  }
  if (event.calls && event.calls.length) {
    const words = el("ol", { class: "words", "aria-label": `${who}'s words` });
    for (const c of event.calls) {
      if (c.fallback) {
        words.append(el("li", { class: "fallback", text: `fallback: played ${c.fallback} (${c.error})` }));
        continue;
      }
      words.append(el("li", {},
        el("pre", { class: "reply", text: c.reply == null ? "(no reply)" : c.reply }),
        el("span", { class: c.error ? "error" : "muted", text: c.error ? c.error : `read as ${c.move}${c.cached ? " (cached)" : ""}` })));
    }
    box.append(el("p", { class: "muted", text: "The model's words at this move:" }), words);
  }
}

function renderLog(events, table) {
  const log = $("log");
  log.replaceChildren();
  let round = -1;
  for (const e of events) {
    if (e.round !== round) {
      round = e.round;
      log.append(el("li", { class: "log-round", text: `Round ${round + 1}` }));
    }
    log.append(el("li", {}, `${table.seats[e.seat].name}: ${e.text}`));
    if (e.reveal) for (const line of e.reveal.summary.slice(1)) log.append(el("li", { class: "log-reveal", text: line.trim() }));
  }
}

// The result box sits below the table (it hides no seat). Close (or Escape) dismisses it
// until the next game; the Result button in the controls shows it again. Keyboard focus
// moves to the box when it opens and back to where it was (or to Result) when it closes.
function renderFinal(table, extra) {
  const box = $("final");
  if (!table.over) {
    const hadFocus = !box.hidden && box.contains(document.activeElement);
    box.hidden = true;
    box.replaceChildren();
    $("results-btn").hidden = true;
    S.finalClosed = false;
    if (hadFocus) restoreFocus();
    return;
  }
  const focused = box.contains(document.activeElement) ? document.activeElement.id : null;
  const order = [...table.seats].sort((a, b) => a.place - b.place);
  box.replaceChildren(
    el("div", { class: "final-head" }, el("h2", { id: "final-title", text: "Game over" }),
      el("button", { type: "button", id: "final-close", title: "Close (Esc)", onclick: closeFinal }, "Close")),
    el("ol", { id: "places" }, order.map((s) =>
      el("li", { dataset: { seat: s.seat, place: s.place } }, `${ordinal(s.place)}: ${s.name}`))),
    extra || "");
  if (focused && $(focused)) $(focused).focus({ preventScroll: true });
  if (S.finalClosed) { box.hidden = true; $("results-btn").hidden = false; }
  else if (box.hidden) openFinal();
}

function openFinal() {
  const box = $("final");
  const active = document.activeElement;
  S.finalReturn = active && active !== document.body && !box.contains(active) ? active : null;
  S.finalClosed = false;
  box.hidden = false;
  $("results-btn").hidden = true;
  box.focus();
}

function closeFinal() {
  const box = $("final");
  if (box.hidden) return false;
  const hadFocus = box.contains(document.activeElement);
  S.finalClosed = true;
  box.hidden = true;
  $("results-btn").hidden = false;
  if (hadFocus || document.activeElement === document.body) restoreFocus();
  return true;
}

function restoreFocus() {
  const back = S.finalReturn;
  S.finalReturn = null;
  const shown = (node) => node && node.isConnected && node.getClientRects().length > 0;
  const target = [back, $("results-btn"), $("new-game-btn")].find(shown);
  if (target) target.focus();
}

// ----------------------------------------------------------------------------- moves
function renderMoves(view) {
  const box = $("moves");
  box.replaceChildren();
  const table = view.table;
  if (S.mode !== "play") return;
  const you = table.seats[view.you];
  box.append(el("h2", { text: "Your dice" }),
    el("div", { class: "your-dice", id: "your-dice" }, you.dice && you.dice.length ? you.dice.map((f) => die(f)) : el("span", { class: "muted", text: you.out ? "You are out." : "—" })));
  if (table.over) return;
  if (!view.legal) {
    const seat = table.seats[table.current_player];
    box.append(el("p", { class: "waiting", id: "waiting" }, `Waiting for ${seat.name}…`));
    return;
  }
  const legal = view.legal;
  box.append(el("h2", { text: "Your move" }));
  const calls = el("div", { class: "calls" });
  if (legal.challenge !== null) {
    calls.append(el("button", { type: "button", class: "move call", id: "challenge-btn", dataset: { action: legal.challenge }, title: "Challenge the last bid (C)", onclick: () => play(legal.challenge) }, "Challenge"));
  }
  if (legal.exact !== null) {
    calls.append(el("button", { type: "button", class: "move call", id: "exact-btn", dataset: { action: legal.exact }, title: `Exact call (X)`, onclick: () => play(legal.exact) }, legal.exact_name[0].toUpperCase() + legal.exact_name.slice(1)));
  }
  if (calls.childNodes.length) box.append(calls);
  if (legal.quick.length) {
    box.append(el("p", { class: "muted", text: "Lowest raise on each face:" }),
      el("div", { class: "quick" }, legal.quick.map((b) =>
        el("button", { type: "button", class: "move bid", dataset: { action: b.id }, title: `bid ${b.text}`, onclick: () => play(b.id) }, `${b.quantity} × `, die(b.face)))));
    // any legal bid: quantity then face, both restricted to what the mask allows
    const quantities = [...new Set(legal.bids.map((b) => b.quantity))];
    const qSelect = el("select", { id: "pick-quantity", "aria-label": "quantity" }, quantities.map((q) => el("option", { value: q, text: q })));
    const fSelect = el("select", { id: "pick-face", "aria-label": "face" });
    const fillFaces = () => {
      const q = Number(qSelect.value);
      fSelect.replaceChildren(...legal.bids.filter((b) => b.quantity === q).map((b) => el("option", { value: b.id, text: `${b.face}s` })));
    };
    qSelect.addEventListener("change", fillFaces);
    fillFaces();
    box.append(el("form", { class: "picker", onsubmit: (ev) => { ev.preventDefault(); play(Number(fSelect.value)); } },
      el("label", {}, "Bid ", qSelect), el("label", {}, " × ", fSelect), el("button", { type: "submit", class: "move", id: "bid-btn" }, "Bid")));
  }
  const first = box.querySelector("button.move");
  if (first && !box.contains(document.activeElement)) first.focus({ preventScroll: true });
}

// ----------------------------------------------------------------------------- live games
function info(view) {
  const rules = view.rules;
  const parts = [view.preset || "custom rules", `${rules.num_players} players`, `${rules.dice_per_player} dice`,
    `ones ${rules.ones.replace("_", " ")}`];
  if (rules.exact_call !== "none") parts.push(view.exact_name);
  parts.push(view.mode === "watch" ? "watching" : view.mode);
  $("info").textContent = parts.join(" · ");
}

function renderLive() {
  const view = S.view;
  const table = view.table;
  info(view);
  document.body.dataset.mode = S.mode;
  document.body.dataset.over = table.over ? "1" : "0";
  document.body.dataset.turn = table.turn;
  renderTable(table, { you: view.you, showAll: S.showAll || S.mode === "play", lastReveal: view.last_reveal });
  renderMoves(view);
  const lastEvent = S.events.length ? S.events[S.events.length - 1] : null;
  renderEvent(lastEvent, table);
  renderReveal(view.last_reveal, table);
  renderBids(table);
  renderLog(S.events, table);
  const gameId = view.game_id;
  renderFinal(table, el("div", { class: "final-actions" },
    el("button", { type: "button", id: "again-btn", onclick: () => startGame({ ...lastSettings(), seed: null }) }, "Play again"),
    el("button", { type: "button", id: "replay-btn", onclick: () => openReplayOf(gameId) }, "Watch the replay"),
    el("a", { href: `/api/games/${gameId}/record`, download: `game_${gameId.slice(0, 8)}.jsonl` }, "Download the recording"),
    view.record_path ? el("p", { class: "muted", text: `Saved to ${view.record_path}` }) : null));
  $("show-all-label").hidden = S.mode === "play";
}

async function onView(view, reset) {
  if (reset) S.events = [];
  S.view = view;
  S.events.push(...view.events);
  if (view.table.over && S.mode === "play" && !S.fullLog) {
    // probabilities stay hidden while playing; fetch them once the game is over
    S.fullLog = true;
    const full = await api("GET", `/api/games/${view.game_id}?since=0`);
    S.events = full.events;
  }
  renderLive();
  schedule();
}

function schedule() {
  clearTimeout(S.timer);
  S.timer = null;
  const view = S.view;
  if (!view || S.mode === "replay" || view.waiting_for !== "bot" || S.paused) return;
  const last = S.events[S.events.length - 1];
  const wait = S.delay * (last && last.reveal ? 3 : 1);
  S.timer = setTimeout(stepBot, wait);
}

// One move request at a time: a bot's (step) or ours (act), for the current turn.
function setBusy(busy) {
  S.busy = busy;
  document.body.dataset.busy = busy ? "1" : "0"; // a move request is in flight (tests wait on it)
}

async function postMove(kind, extra) {
  setBusy(true);
  try {
    const body = { turn: S.view.table.turn, since: S.events.length, ...extra };
    const view = await api("POST", `/api/games/${S.view.game_id}/${kind}`, body);
    showError("");
    await onView(view);
  } catch (e) {
    await handleMoveError(e);
  } finally {
    setBusy(false);
  }
}

async function stepBot() {
  if (S.busy || !S.view) return;
  await postMove("step", {});
}

async function play(action) {
  if (S.busy || !S.view || S.mode !== "play") return;
  await postMove("act", { action });
}

async function handleMoveError(e) {
  showError(e.message);
  if (e.status === 404) { S.view = null; clearTimeout(S.timer); return; }
  if (S.view) {
    try {
      await onView(await api("GET", `/api/games/${S.view.game_id}?since=${S.events.length}`));
    } catch (e2) {
      showError(`${e.message} (${e2.message})`);
    }
  }
}

function lastSettings() {
  return S.settings || S.config.defaults;
}

async function startGame(settings) {
  showError("");
  S.settings = settings;
  S.fullLog = false;
  clearTimeout(S.timer);
  try {
    const view = await api("POST", "/api/games", {
      rules: settings.rules, players: settings.players, specs: settings.specs,
      seed: settings.seed === "" || settings.seed === undefined ? null : settings.seed,
    });
    S.mode = view.mode;
    $("setup").hidden = true;
    $("game").hidden = false;
    $("replay-controls").hidden = true;
    history.replaceState(null, "", `/#game=${view.game_id}`);
    await onView(view, true);
  } catch (e) {
    showError(e.message);
    showSetup();
  }
}

async function resume(gameId) {
  const view = await api("GET", `/api/games/${gameId}?since=0`);
  S.mode = view.mode;
  S.fullLog = false;
  $("setup").hidden = true;
  $("game").hidden = false;
  await onView(view, true);
}

// ----------------------------------------------------------------------------- replays
async function openReplayOf(gameId) {
  try {
    const { replay_id: rid } = await api("POST", `/api/games/${gameId}/replay`, {});
    location.href = `/?replay=${rid}`;
  } catch (e) {
    showError(e.message);
  }
}

async function loadReplay(rid) {
  S.replay = await api("GET", `/api/replays/${rid}`);
  S.mode = "replay";
  S.frame = 0;
  S.paused = true;
  $("setup").hidden = true;
  $("game").hidden = false;
  $("replay-controls").hidden = false;
  const slider = $("frame");
  slider.max = S.replay.frames.length - 1;
  const r = S.replay;
  const movesOnly = r.header && r.header.probabilities === false ? " · moves only (no probabilities recorded)" : "";
  $("info").textContent = `replay · ${r.preset || "custom rules"} · ${r.rules.num_players} players · seed ${r.seed} · ${r.source}${movesOnly}`;
  renderReplay();
}

function renderReplay() {
  const r = S.replay;
  const frame = r.frames[S.frame];
  const table = frame.table;
  document.body.dataset.mode = "replay";
  document.body.dataset.frame = S.frame;
  document.body.dataset.over = table.over ? "1" : "0";
  $("frame").value = S.frame;
  $("frame-value").textContent = `${S.frame} / ${r.frames.length - 1}`;
  renderTable(table, { you: null, showAll: S.showAll, lastReveal: frame.last_reveal });
  renderMoves({ table });
  renderEvent(frame.event, table, frame.event ? `Turn ${frame.event.turn + 1}` : null);
  renderReveal(frame.last_reveal, table);
  renderBids(table);
  const events = r.frames.slice(1, S.frame + 1).map((f) => f.event);
  renderLog(events, table);
  renderFinal(table);
  $("pause-btn").textContent = S.paused ? "Play" : "Pause";
  clearTimeout(S.timer);
  if (!S.paused && S.frame < r.frames.length - 1) {
    S.timer = setTimeout(() => gotoFrame(S.frame + 1), S.delay * (frame.event && frame.event.reveal ? 3 : 1));
  }
}

function gotoFrame(k) {
  if (!S.replay) return;
  S.frame = Math.max(0, Math.min(S.replay.frames.length - 1, k));
  if (S.frame === S.replay.frames.length - 1) S.paused = true;
  renderReplay();
}

// ----------------------------------------------------------------------------- setup
function fillSetup(config) {
  const d = config.defaults;
  $("setup-rules").replaceChildren(...config.presets.map((p) => el("option", { value: p, text: p, selected: p === d.rules })));
  $("setup-players").value = d.players;
  $("spec-list").replaceChildren(...config.agents.map((a) => el("option", { value: a })));
  const human = d.specs.indexOf("human");
  const bots = d.specs.filter((s) => s !== "human");
  $("setup-seat").value = human >= 0 ? human : 0;
  $("setup-specs").value = bots.join(" ");
  document.querySelector(`input[name=mode][value=${human >= 0 ? "play" : "watch"}]`).checked = true;
  if (d.seed !== null && d.seed !== undefined) $("setup-seed").value = d.seed;
}

function settingsFromForm() {
  const players = Number($("setup-players").value);
  const watch = document.querySelector("input[name=mode]:checked").value === "watch";
  const bots = $("setup-specs").value.split(/[\s,]+/).filter(Boolean);
  if (!bots.length) bots.push("probabilistic");
  const seat = Math.max(0, Math.min(players - 1, Number($("setup-seat").value) || 0));
  const specs = [];
  let k = 0;
  for (let s = 0; s < players; s++) specs.push(!watch && s === seat ? "human" : bots[k++ % bots.length]);
  const seed = $("setup-seed").value;
  return { rules: $("setup-rules").value, players, specs, seed: seed === "" ? null : Number(seed) };
}

function showSetup() {
  clearTimeout(S.timer);
  $("setup").hidden = false;
  $("setup-rules").focus();
}

// ----------------------------------------------------------------------------- wiring
function setDelay(ms) {
  S.delay = ms;
  $("speed").value = ms;
  $("speed-value").textContent = `${(ms / 1000).toFixed(1)} s`;
  localStorage.setItem("liars.delay", String(ms));
}

function togglePause() {
  S.paused = !S.paused;
  $("pause-btn").textContent = S.paused ? "Resume" : "Pause";
  if (S.mode === "replay") {
    if (!S.paused && S.frame === S.replay.frames.length - 1) S.frame = 0;
    renderReplay();
  } else schedule();
}

function rerender() {
  if (S.mode === "replay") renderReplay();
  else if (S.view) renderLive();
}

function wire() {
  $("speed").addEventListener("input", (e) => setDelay(Number(e.target.value)));
  $("pause-btn").addEventListener("click", togglePause);
  $("show-all").checked = S.showAll;
  $("show-all").addEventListener("change", (e) => {
    S.showAll = e.target.checked;
    localStorage.setItem("liars.showAll", S.showAll ? "1" : "0");
    rerender();
  });
  $("results-btn").addEventListener("click", openFinal);
  $("first-btn").addEventListener("click", () => gotoFrame(0));
  $("back-btn").addEventListener("click", () => gotoFrame(S.frame - 1));
  $("fwd-btn").addEventListener("click", () => gotoFrame(S.frame + 1));
  $("last-btn").addEventListener("click", () => gotoFrame(Infinity));
  $("frame").addEventListener("input", (e) => gotoFrame(Number(e.target.value)));
  $("new-game-btn").addEventListener("click", () => {
    if (S.mode === "replay") { location.href = "/"; return; }
    showSetup();
  });
  $("setup-form").addEventListener("submit", (e) => {
    e.preventDefault();
    startGame(settingsFromForm());
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && closeFinal()) { e.preventDefault(); return; }
    const tag = (e.target.tagName || "").toLowerCase();
    if (["input", "select", "textarea"].includes(tag) || e.ctrlKey || e.metaKey || e.altKey) return;
    const key = e.key.toLowerCase();
    if (key === "c" && $("challenge-btn")) { e.preventDefault(); $("challenge-btn").click(); }
    else if (key === "x" && $("exact-btn")) { e.preventDefault(); $("exact-btn").click(); }
    else if (key === "n") { e.preventDefault(); $("new-game-btn").click(); }
    else if (key === " " && tag !== "button" && S.mode !== "play") { e.preventDefault(); togglePause(); }
    else if (S.mode === "replay" && key === "arrowright") { e.preventDefault(); gotoFrame(S.frame + 1); }
    else if (S.mode === "replay" && key === "arrowleft") { e.preventDefault(); gotoFrame(S.frame - 1); }
    else if (S.mode === "replay" && key === "home") { e.preventDefault(); gotoFrame(0); }
    else if (S.mode === "replay" && key === "end") { e.preventDefault(); gotoFrame(Infinity); }
  });
}

async function init() {
  wire();
  try {
    S.config = await api("GET", "/api/config");
  } catch (e) {
    showError(`cannot reach the server: ${e.message}`);
    return;
  }
  setDelay(S.delay || S.config.defaults.delay_ms || 900);
  fillSetup(S.config);
  const params = new URLSearchParams(location.search);
  if (params.get("replay")) {
    try { await loadReplay(params.get("replay")); } catch (e) { showError(e.message); }
    return;
  }
  const match = location.hash.match(/game=([\w-]+)/);
  if (match) {
    try { await resume(match[1]); return; } catch (e) { showError(e.message); }
  }
  if (S.config.defaults.autostart) await startGame(S.config.defaults);
  else showSetup();
}

init();
