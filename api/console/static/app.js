// gatehouse console: refresh the overview in place, and replay through the
// API (the same transaction as the CLI; the API's CSRF header for cookie
// requests). No inline script: the page's CSP allows only this file.
"use strict";

function replayURL(provider, id, force) {
  return "/api/v1/events/" + encodeURIComponent(provider) + "/" + encodeURIComponent(id) + "/replay" + (force ? "?force=true" : "");
}

// replay asks the API; an event that already finished needs the force the
// API asks for, confirmed by the operator.
async function replay(provider, id, askForce) {
  const post = (force) => fetch(replayURL(provider, id, force), { method: "POST", credentials: "same-origin", headers: { "X-CSRF": "1" } });
  let r = await post(false);
  if (r.status === 409 && askForce && window.confirm("Event " + id + " already finished or is in processing. Replay it anyway (force)?")) {
    r = await post(true);
  }
  return r.status;
}

function setup() {
  for (const b of document.querySelectorAll("button.replay")) {
    b.addEventListener("click", async () => {
      const out = b.parentElement.querySelector(".progress");
      out.textContent = "replaying…";
      const status = await replay(b.dataset.provider, b.dataset.event, true);
      out.textContent = status === 202 ? "replayed: back in the queue; reload to follow it" : "refused (" + status + ")";
    });
  }
  for (const f of document.querySelectorAll("form.replay-many")) {
    f.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const all = ev.submitter && ev.submitter.value === "all";
      const boxes = [...f.querySelectorAll("input[name=event]")].filter((c) => all || c.checked);
      const out = f.querySelector(".progress");
      if (boxes.length === 0) { out.textContent = "select at least one event"; return; }
      let done = 0, failed = 0;
      for (const c of boxes) {
        const status = await replay(c.dataset.provider, c.value, false);
        if (status === 202) { done++; c.checked = false; c.disabled = true; } else { failed++; }
        out.textContent = "replayed " + done + " of " + boxes.length + (failed ? ", " + failed + " refused" : "");
      }
    });
  }
  for (const b of document.querySelectorAll("button.issue-status")) {
    b.addEventListener("click", async () => {
      const out = b.parentElement.querySelector(".progress");
      const r = await fetch("/api/v1/issues/" + encodeURIComponent(b.dataset.issue) + "/status", {
        method: "POST", credentials: "same-origin", headers: { "X-CSRF": "1", "Content-Type": "application/json" },
        body: JSON.stringify({ status: b.dataset.status }),
      });
      if (r.ok) { window.location.reload(); } else { out.textContent = "refused (" + r.status + ")"; }
    });
  }
  for (const b of document.querySelectorAll("button.parked-release")) {
    b.addEventListener("click", async () => {
      const out = b.parentElement.querySelector(".progress");
      const r = await fetch("/api/v1/parked/release", {
        method: "POST", credentials: "same-origin", headers: { "X-CSRF": "1", "Content-Type": "application/json" },
        body: JSON.stringify({ destination: b.dataset.destination, provider: b.dataset.provider, key: b.dataset.key }),
      });
      out.textContent = r.ok ? "released: its events go out in order" : "refused (" + r.status + ")";
      if (r.ok) { b.disabled = true; }
    });
  }
  for (const b of document.querySelectorAll("button.issue-replay")) {
    b.addEventListener("click", async () => {
      const out = b.parentElement.querySelector(".progress");
      out.textContent = "replaying…";
      const r = await fetch("/api/v1/issues/" + encodeURIComponent(b.dataset.issue) + "/replay", {
        method: "POST", credentials: "same-origin", headers: { "X-CSRF": "1" },
      });
      if (r.status !== 202) { out.textContent = "refused (" + r.status + ")"; return; }
      const o = await r.json();
      out.textContent = "replayed " + o.replayed.length + (o.failed.length ? ", " + o.failed.length + " refused" : "") +
        (o.remaining ? ", " + o.remaining + " more dead: replay again" : "");
    });
  }
  const table = document.getElementById("providers");
  if (table) {
    setInterval(async () => {
      const r = await fetch("/console/overview.json", { credentials: "same-origin" });
      if (!r.ok) return;
      const o = await r.json();
      for (const p of o.Providers || []) {
        const row = table.querySelector("tr[data-provider=\"" + CSS.escape(p.Provider) + "\"]");
        if (!row) continue;
        for (const k of ["ReceivedHour", "Pending", "Retrying", "Dead", "Succeeded", "Stale", "Skipped"]) {
          const cell = row.querySelector("[data-k=" + k + "]");
          if (cell) (cell.querySelector("a") || cell).textContent = String(p[k]);
        }
      }
      document.getElementById("outbox-unsent").textContent = String(o.OutboxUnsent);
      document.getElementById("refreshed").textContent = "as of " + new Date(o.At).toISOString().slice(11, 19) + " UTC";
    }, 5000);
  }
}

document.addEventListener("DOMContentLoaded", setup);
