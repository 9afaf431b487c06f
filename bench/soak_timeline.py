"""One picture of a soak run (bench/soak.py): submissions, faults, alerts, latency, memory and disk on one time axis.

``python bench/soak_timeline.py summary.json out.png`` redraws it from a saved summary. Every panel shares the x
axis (minutes since the run started) and every fault is shaded faintly across all of them, so one sees what each
fault caused.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUTCOMES = ("same", "different", "failed", "stuck")
TASK_MARKERS = "osD^vP*X"


def _none(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", transform=ax.transAxes, ha="center", va="center", color="grey")
    ax.set_yticks([])


def _legend(ax, **kwargs) -> None:
    """A small legend outside the panel, on the right, so it never hides data."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, frameon=False, borderaxespad=0, **kwargs)


def _rows(ax, labels: list[str]) -> dict[str, int]:
    """One y row per label, top to bottom; returns label -> y."""
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_ylim(len(labels) - 0.4, -0.6)
    return {label: y for y, label in enumerate(labels)}


def draw_timeline(summary: dict, out_png: Path) -> Path:
    """Draw ``summary`` (bench/soak.py's JSON) as six stacked panels into ``out_png``; returns its path."""
    import matplotlib
    from matplotlib.figure import Figure  # no pyplot: a bare Figure draws with Agg and leaves the backend alone
    from matplotlib.lines import Line2D

    t0, t1 = summary["started"], summary["ended"]
    span = max((t1 - t0) / 60, 1e-3)
    runs, faults = summary.get("runs", []), summary.get("faults", [])
    alerts, samples, disk = summary.get("alerts", {}), summary.get("samples", []), summary.get("disk", [])

    def m(t: float) -> float:
        return (t - t0) / 60

    min_width = span / 200  # an instant fault still shows (0.3 minutes on an hour)
    fig = Figure(figsize=(14, 10), dpi=100, layout="constrained")
    axes = fig.subplots(6, 1, sharex=True, height_ratios=[3.2, 1.4, 1.2, 1.8, 1.8, 1.2])
    ax_runs, ax_faults, ax_alerts, ax_latency, ax_memory, ax_disk = axes
    titles = ("Submissions (bar: submitted to finished)", "Faults", "Alerts firing (bar), expected page (▼)",
              "Latency (s) at finish: hollow = no fault, filled = during a fault", "Resident memory (MiB) per pod",
              "Disk (MiB)")
    for ax, title in zip(axes, titles):
        ax.set_title(title, fontsize=9, loc="left")
        ax.tick_params(labelsize=7)
        ax.grid(axis="x", alpha=0.3)

    kinds = sorted({f["kind"] for f in faults})
    fault_colour = {kind: f"C{i % 10}" for i, kind in enumerate(kinds)}
    for f in faults:
        start, width = m(f["start"]), max(m(f["end"]) - m(f["start"]), min_width)
        for ax in axes:
            ax.axvspan(start, start + width, color=fault_colour[f["kind"]], alpha=0.08, lw=0)

    if runs:
        tasks = sorted({r["task"] for r in runs})
        teams = sorted({r["team"] for r in runs})
        row = _rows(ax_runs, [f"{task} · {team}" for task in tasks for team in teams])
        for r in runs:
            y, start = row[f"{r['task']} · {r['team']}"], m(r["submitted"])
            if r["finished"] is None:
                ax_runs.hlines(y, start, span, colors="tab:red", lw=1.5, linestyles=(0, (2, 2)), zorder=3)
                ax_runs.plot(start, y, "|", color="tab:red", ms=8, zorder=3)
                continue
            ok, end = r["outcome"] == "same", max(m(r["finished"]), start + span / 1000)
            ax_runs.hlines(y, start, end, colors="tab:green" if ok else "tab:red", lw=2 if ok else 4,
                           zorder=2 if ok else 3)
        for y in range(len(teams), len(row), len(teams)):
            ax_runs.axhline(y - 0.5, color="grey", lw=0.5)
        _legend(ax_runs, handles=[Line2D([], [], color="tab:green", lw=2, label="same"),
                                  Line2D([], [], color="tab:red", lw=4, label="different / failed"),
                                  Line2D([], [], color="tab:red", lw=1.5, ls=(0, (2, 2)), marker="|", ms=8,
                                         label="not finished")])
    else:
        _none(ax_runs, "runs")

    if faults:
        row = _rows(ax_faults, kinds)
        for f in faults:
            start, width = m(f["start"]), max(m(f["end"]) - m(f["start"]), min_width)
            ax_faults.broken_barh([(start, width)], (row[f["kind"]] - 0.35, 0.7), color=fault_colour[f["kind"]])
    else:
        _none(ax_faults, "faults")

    paged = [(page, f) for f in faults for page in f.get("pages", [])]
    names = sorted(set(alerts) | {page for page, _ in paged})
    if names:
        row = _rows(ax_alerts, names)
        for name, intervals in alerts.items():
            bars = [(m(a["start"]), max(m(a["end"] or t1) - m(a["start"]), min_width)) for a in intervals]
            ax_alerts.broken_barh(bars, (row[name] - 0.3, 0.6), color="tab:orange")
        for page, f in paged:
            ax_alerts.plot(m(f["start"]), row[page], "v", color="black", ms=6, zorder=3, clip_on=False)
    else:
        _none(ax_alerts, "alerts")

    timed = [r for r in runs if r.get("seconds") is not None and r.get("finished") is not None]
    if timed:
        for i, task in enumerate(sorted({r["task"] for r in timed})):
            for fault in (False, True):
                points = [r for r in timed if r["task"] == task and bool(r["fault"]) == fault]
                colour = f"C{i % 10}"
                ax_latency.scatter([m(r["finished"]) for r in points], [r["seconds"] for r in points], s=14,
                                   marker=TASK_MARKERS[i % len(TASK_MARKERS)], edgecolors=colour, linewidths=0.8,
                                   facecolors=colour if fault else "none", label=None if fault else task, clip_on=False)
        seconds = [r["seconds"] for r in timed if r["seconds"] > 0]
        if seconds and max(seconds) / min(seconds) > 30:
            ax_latency.set_yscale("log")
        _legend(ax_latency)
    else:
        _none(ax_latency, "finished runs")

    if samples:
        pods = sorted({s["pod"] for s in samples})
        for i, pod in enumerate(pods):
            points = sorted((s["t"], s["rss_mib"]) for s in samples if s["pod"] == pod)
            ax_memory.plot([m(t) for t, _ in points], [v for _, v in points], lw=1, label=pod,
                           color=matplotlib.colormaps["tab20"](i % 20))
        _legend(ax_memory, ncol=1 + (len(pods) - 1) // 8, columnspacing=1)
    else:
        _none(ax_memory, "memory samples")

    if disk:
        points = sorted(disk, key=lambda d: d["t"])
        for key, label in (("store_mib", "object store"), ("jetstream_mib", "JetStream"), ("state_mib", "state")):
            ax_disk.plot([m(d["t"]) for d in points], [d[key] for d in points], lw=1.2, label=label)
        _legend(ax_disk)
    else:
        _none(ax_disk, "disk samples")

    ax_disk.set_xlim(0, span)
    ax_disk.set_xlabel("minutes since start", fontsize=8)
    counts = {o: sum(r["outcome"] == o for r in runs) for o in OUTCOMES}
    fig.suptitle(f"{len(runs)} runs: {counts['same']} same, {counts['different']} different, {counts['failed']} "
                 f"failed, {counts['stuck']} stuck; {len(faults)} faults", fontsize=11)
    out_png = Path(out_png)
    fig.savefig(out_png, dpi=100)
    return out_png


def main(argv: list[str] | None = None) -> int:
    """Redraw the picture of a saved summary: ``soak_timeline.py SUMMARY.json OUT.png``."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python bench/soak_timeline.py SUMMARY.json OUT.png", file=sys.stderr)
        return 2
    print(draw_timeline(json.loads(Path(argv[0]).read_text()), Path(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
