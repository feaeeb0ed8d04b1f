// flower ui: the runs list and one run, live over server-sent events.
// Every text from a run (model text, tool output, questions) goes into the page with textContent, never as
// HTML, so a tool output holding "<script>" shows those characters and runs nothing.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const LOG_LINES = 400;
const $ = (id) => document.getElementById(id);

function withToken(path) {
  return TOKEN ? path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(TOKEN) : path;
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function money(usd) { return "$" + (Number(usd) || 0).toFixed(4); }
function tokens(n) { n = Number(n) || 0; return n >= 1000 ? (n / 1000).toFixed(1) + "k" : String(n); }
function seconds(ms) { return (Math.max(0, ms) / 1000).toFixed(1) + " s"; }
function runKey(run) { return run.source + "/" + run.id; }

// ---- the runs list ------------------------------------------------------------------------------------
let runs = [];
let selected = decodeURIComponent(location.hash.slice(1)) || "";

function renderRuns() {
  const list = $("runs");
  list.replaceChildren();
  $("no-runs").hidden = runs.length > 0;
  for (const run of runs) {
    const item = el("li");
    item.dataset.run = runKey(run);
    item.dataset.state = run.state || "";
    if (runKey(run) === selected) item.classList.add("selected");
    const top = el("div");
    top.append(el("span", run.title || run.id, "id"), " ", el("span", run.state || "?", "badge state " + (run.state || "")));
    if (run.question) top.append(" ", el("span", "? question", "badge ask"));
    if (run.source !== "local") top.append(" ", el("span", run.source, "badge"));
    const line = [run.step ? "step " + run.step : "", money(run.cost_usd)];
    if (run.context) line.push(tokens(run.context) + " context");
    item.append(top, el("div", line.filter(Boolean).join(" · "), "muted"));
    item.addEventListener("click", () => select(runKey(run)));
    list.append(item);
  }
  const current = runs.find((r) => runKey(r) === selected);
  if (current) showRunHead(current);
  if (!selected && runs.length) select(runKey(runs[0]));
}

function followRuns() {
  const source = new EventSource(withToken("api/runs/stream"));
  source.addEventListener("open", () => { $("connection").textContent = "live"; });
  source.addEventListener("error", () => { $("connection").textContent = "reconnecting…"; });
  source.addEventListener("runs", (message) => {
    const listing = JSON.parse(message.data);
    runs = listing.runs || [];
    $("errors").textContent = (listing.errors || []).join(" · ");
    renderRuns();
  });
}

// ---- one run: its events folded into what the page shows ---------------------------------------------
let view = null;
let stream = null;

function emptyView(key) {
  return { key, seq: 0, steps: [], tool: null, workers: new Map(), incidents: [], question: null, lastMessage: "", budget: null,
           lastWasAssistant: false, finished: null, log: [] };
}

function currentStep(v) {
  if (!v.steps.length) v.steps.push({ name: "(run)", points: [], note: "" });
  return v.steps[v.steps.length - 1];
}

function addContext(v, e) {
  // One point per API call of the main thread, as `flower analyze` counts turns: the call's blocks arrive as
  // separate events with the same message id (without one, consecutive assistant events are one call).
  const p = e.payload || {};
  const id = p.message_id || "";
  const same = id ? id === v.lastMessage : v.lastWasAssistant;
  v.lastMessage = id;
  if (e.subagent || !p.context || same) return;
  currentStep(v).points.push(p.context);
}

const ASSISTANT_KINDS = new Set(["text", "thinking", "tool_call"]);

function fold(v, item) {
  const e = item.event || {};
  const p = e.payload || {};
  const at = item.at_ms || Date.now();
  v.seq = item.seq;
  const assistant = ASSISTANT_KINDS.has(e.kind) || (e.kind === "system" && e.text === "usage");
  if (assistant) addContext(v, e);
  v.lastWasAssistant = assistant;
  if (p.worker && p.worker.id) noteWorker(v, p.worker, e);
  if (p.budget && typeof p.budget === "object" && Number(p.budget.limit_usd) > 0) v.budget = p.budget; // the run's budget, as its events tell it
  switch (e.kind) {
    case "step":
      v.steps.push({ name: e.text, index: p.index, total: p.total, points: [], note: p.note || "", started: at });
      v.tool = null; break;
    case "tool_call":
      if (!e.subagent) v.tool = { name: e.tool, text: e.text, since: at, id: p.id }; break;
    case "tool_result":
      if (!e.subagent && v.tool && (!p.tool_use_id || p.tool_use_id === v.tool.id)) v.tool = null; break;
    case "task":
      if (p.task_id) noteWorker(v, { id: p.task_id, description: e.text }, e); break;
    case "result": {
      const step = currentStep(v);
      step.ok = p.ok; step.cost = p.cost_usd; step.session = p.session_id; v.tool = null; break;
    }
    case "ask": askEvent(v, e, p); break;
    case "handoff": case "retry":
      v.incidents.push({ kind: e.kind, text: e.text, at }); break;
    case "done":
      for (const step of v.steps) if (step.ok === undefined) step.ok = e.ok === true; // a stopped step ends here
      v.finished = e; v.tool = null; v.question = null; break;
    default:
      if (/wait|limit|offline|budget/.test(e.kind) || p.wait) v.incidents.push({ kind: e.kind, text: e.text, at });
  }
  v.log.push(logLine(item));
  if (v.log.length > LOG_LINES) v.log.shift();
}

function noteWorker(v, worker, e) {
  const known = v.workers.get(worker.id) || { id: worker.id, description: worker.description || worker.id, status: "running", last: "" };
  const p = e.payload || {};
  if (e.kind === "task" && p.status) known.status = p.status;
  else if (e.kind === "tool_call") known.last = "[" + e.tool + "] " + (e.text || "");
  v.workers.set(worker.id, known);
}

function askEvent(v, e, p) {
  if (p.kind === "question") {
    if (p.state === "pending" || p.state === "asked" || p.state === "waiting") v.question = { id: p.id, text: p.question || e.text, options: p.options || [] };
    else if (v.question && (!p.id || p.id === v.question.id)) v.question = null;
  }
}

function logLine(item) {
  const e = item.event || {};
  const who = (e.subagent ? "  worker " : "") + (e.kind === "ask" && e.payload && e.payload.state ? "(" + e.payload.state + ") " : "");
  const tool = e.tool ? "[" + e.tool + "] " : "";
  const text = e.text || (e.payload && e.payload.text) || "";
  return who + e.kind + " " + tool + String(text).slice(0, 2000);
}

// ---- drawing one run --------------------------------------------------------------------------------------
function showRunHead(run) {
  $("run-title").textContent = run.title || run.id;
  const state = $("run-state");
  state.textContent = run.state || "?";
  state.className = "badge " + (run.state || "");
  const parts = [run.source, run.step ? "step " + run.step : "", money(run.cost_usd)];
  if (run.context) parts.push(tokens(run.context) + " context now");
  if (run.session_id) parts.push("session " + String(run.session_id).slice(0, 8));
  $("run-summary").textContent = parts.filter(Boolean).join(" · ");
  const budget = Number(run.budget_usd) || (view && view.budget ? Number(view.budget.limit_usd) : 0);
  $("budget").hidden = !budget;
  if (budget) {
    const used = Number(run.cost_usd) || 0;
    $("budget-used").style.width = Math.min(100, (100 * used) / budget).toFixed(1) + "%";
    $("budget-text").textContent = money(used) + " of " + money(budget) + " budget";
  }
  if (view) showQuestion(questionNow());
  const ended = ["done", "stopped", "failed", "dead"].includes(run.state);
  $("stop").disabled = ended;
  $("mail-form").hidden = ended || (Array.isArray(run.accepts) && run.accepts.length > 0 && !run.accepts.includes("mail"));
}

function questionNow() {
  // The run's events say which question waits; before they are read, the runs list does.
  if (!view) return null;
  if (view.question || view.seq) return view.question;
  const run = runs.find((r) => runKey(r) === view.key);
  return run && run.question ? { id: "", text: run.question, options: [] } : null;
}

function showQuestion(question) {
  $("question-box").hidden = !question;
  if (!question) return;
  if ($("question-text").textContent !== question.text) {
    $("question-text").textContent = question.text;
    const options = $("question-options");
    options.replaceChildren();
    for (const option of question.options || []) {
      const button = el("button", option, "option");
      button.type = "button";
      button.addEventListener("click", () => { $("answer-input").value = option; $("answer-input").focus(); });
      options.append(button);
    }
  }
}

function drawCurve(step) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "curve");
  svg.setAttribute("viewBox", "0 0 600 140");
  svg.setAttribute("preserveAspectRatio", "none");
  svg.dataset.points = step.points.join(",");
  const peak = Math.max(1, ...step.points);
  const n = step.points.length;
  const xy = step.points.map((c, i) => [n > 1 ? 30 + (560 * i) / (n - 1) : 30, 132 - (110 * c) / peak]); // below the label
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", xy.map(([x, y]) => x.toFixed(1) + "," + y.toFixed(1)).join(" "));
  svg.append(line);
  for (const [x, y] of xy) {
    const dot = document.createElementNS(ns, "circle");
    dot.setAttribute("cx", x.toFixed(1)); dot.setAttribute("cy", y.toFixed(1)); dot.setAttribute("r", "2.5");
    svg.append(dot);
  }
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", "4"); label.setAttribute("y", "12");
  label.textContent = step.name + ": " + n + " turns, peak " + tokens(peak) + ", now " + tokens(step.points[n - 1] || 0);
  svg.append(label);
  return svg;
}

function drawRun() {
  const v = view;
  if (!v) return;
  const run = runs.find((r) => runKey(r) === v.key);
  if (run) showRunHead(run);
  const curves = $("curves");
  curves.replaceChildren(...v.steps.filter((s) => s.points.length).map(drawCurve));
  $("steps").replaceChildren(...v.steps.map((s) => {
    const done = s.ok === undefined ? "running" : s.ok ? "ok" : "failed";
    const cost = s.cost !== undefined ? " · " + money(s.cost) : "";
    return el("li", s.name + " · " + done + cost + (s.note ? " · " + s.note : ""));
  }));
  $("workers").replaceChildren(...[...v.workers.values()].map((w) => el("li", w.description + " · " + w.status + (w.last ? " · " + w.last : ""))));
  $("incidents").replaceChildren(...v.incidents.slice(-50).map((i) => el("li", i.kind + ": " + i.text)));
  const log = $("log");
  const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.replaceChildren(...v.log.map((line) => el("li", line)));
  if (atBottom) log.scrollTop = log.scrollHeight;
  showQuestion(questionNow());
  tick();
  // When each event was on screen: read by the tests and by benchmarks/ui_latency.py (event -> display).
  const drawn = (window.flowerDrawn = window.flowerDrawn || []);
  drawn.push([v.seq, Date.now()]);
  if (drawn.length > 5000) drawn.shift();
}

function tick() {
  if (!view) return;
  const now = $("now-tool");
  if (view.finished) now.textContent = "finished: " + (view.finished.ok === false ? "not done" : "done") + " · " + money(view.finished.cost_usd);
  else if (view.tool) now.textContent = "[" + view.tool.name + "] " + (view.tool.text || "") + " · running for " + seconds(Date.now() - view.tool.since);
  else now.textContent = "no tool running";
}

let pending = false;
function scheduleDraw() {
  // Events come in bursts: draw once per frame, however many arrived.
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; drawRun(); });
}

function select(key) {
  if (view && view.key === key) return;
  selected = key;
  history.replaceState(null, "", "#" + encodeURIComponent(key));
  if (stream) stream.close();
  view = emptyView(key);
  $("run").hidden = false;
  $("verb-result").textContent = "";
  renderRuns();
  const slash = key.indexOf("/");
  const path = "api/runs/" + encodeURIComponent(key.slice(0, slash)) + "/" + encodeURIComponent(key.slice(slash + 1));
  stream = new EventSource(withToken(path + "/events"));
  stream.addEventListener("run-event", (message) => {
    const item = JSON.parse(message.data);
    if (!view || view.key !== key || item.seq <= view.seq) return;
    fold(view, item);
    scheduleDraw();
  });
  stream.addEventListener("run-error", (message) => {
    const problem = JSON.parse(message.data);
    $("verb-result").textContent = problem.error;
    $("verb-result").className = "error";
    if (problem.status === 404 && stream) stream.close(); // no such run: asking again will not find it
  });
  drawRun();
}

// ---- the verbs ----------------------------------------------------------------------------------------------
async function send(verb, text) {
  if (!view) return;
  const slash = view.key.indexOf("/");
  const path = "api/runs/" + encodeURIComponent(view.key.slice(0, slash)) + "/" + encodeURIComponent(view.key.slice(slash + 1)) + "/" + verb;
  const result = $("verb-result");
  result.textContent = verb + "…";
  try {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Flower-Token": TOKEN },
      body: JSON.stringify({ text }),
    });
    const body = await response.json();
    result.textContent = body.ok ? body.said : "could not " + verb + ": " + body.error;
    result.className = body.ok ? "muted" : "error";
    return body.ok;
  } catch (error) {
    result.textContent = "could not " + verb + ": " + error;
    result.className = "error";
    return false;
  }
}

function wire() {
  $("answer-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = $("answer-input");
    if (input.value.trim() && (await send("answer", input.value))) input.value = "";
  });
  $("mail-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = $("mail-input");
    if (input.value.trim() && (await send("mail", input.value))) input.value = "";
  });
  $("stop").addEventListener("click", () => send("stop", ""));
  setInterval(tick, 250);
  if (TOKEN && location.search) history.replaceState(null, "", location.pathname + location.hash); // the cookie carries it on
  followRuns();
  if (selected) select(selected);
}

document.addEventListener("DOMContentLoaded", wire);
