#!/usr/bin/env python3
"""Writes the section "Against every MPI: the tables" of docs/PERFORMANCE.md (and, between their
markers, the summary table "Where pld stands" and the 64 MiB table) from the runs of
docs/perf/run_mpis.sh (docs/perf/mpis/<name>.txt and .csv) and the reasons in
docs/perf/mpis/why.txt, so that every table, its command and its line saying where pld is not
ahead come from one run and cannot drift apart.

Each table's first line is computed from its CSV (ratio = the best MPI's time / pld's time):
below 0.97 is behind, 0.97-1.03 parity (the 3% noise band), above 1.03 ahead. The reason for a
row behind is written by hand in why.txt (`<table name>: <text>`, one line each).

Run from the repository root: python3 docs/perf/mpis_section.py (rewrites the section in place).
"""

import csv
import pathlib
import re

OUT = pathlib.Path("docs/perf/mpis")
DOC = pathlib.Path("docs/PERFORMANCE.md")
HEADING = "## Against every MPI: the tables"
# The collectives in the order run_mpis.sh runs them: docs/perf/lib.sh's COLLECTIVES.
COLLECTIVES = re.search(r"COLLECTIVES=\(([^)]*)\)", pathlib.Path("docs/perf/lib.sh").read_text()).group(1).split()
BEHIND, AHEAD = 0.97, 1.03


def kind(row):
    """Where pld stands at one size: "behind", "parity" (the 3% noise band) or "ahead"."""
    return "behind" if row["r"] < BEHIND else "parity" if row["r"] <= AHEAD else "ahead"


def ratio(x):
    return f"{x:.2f}x"


def wrong(row):
    """Wrong elements at one size, pld's and the MPIs'."""
    return int(row["wrong"]) + int(row.get("best_wrong") or 0)


def table_name(coll, n):
    """A collective's ladder at `n` ranks (8 ranks run a shorter ladder of their own)."""
    return f"{coll}_n{n}" if n < 8 else f"{coll}_n8_ladder"


def size(b):
    b = int(b)
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale and b % scale == 0:
            return f"{b // scale} {unit}"
    return f"{b} B"


def span(values, fmt):
    lo, hi = min(values), max(values)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}-{fmt(hi)}"


def where(rows):
    """One sentence: the sizes where pld is behind, at parity and ahead, with their ratios."""
    runs = []  # (kind, [rows]) of consecutive sizes of one kind
    for row in rows:
        if runs and runs[-1][0] == kind(row):
            runs[-1][1].append(row)
        else:
            runs.append((kind(row), [row]))
    us = lambda x: f"{x:.2f}"
    if len(runs) == 1 and runs[0][0] == "ahead":
        if len(rows) == 1:
            return f"Ahead of the best MPI ({ratio(rows[0]['r'])})."
        return f"Ahead of the best MPI at every size ({span([r['r'] for r in rows], ratio)})."
    parts = []
    for which, group in runs:
        if rows[0]["bytes"] == "0":  # barrier: no size
            sizes = ""
        elif len(group) == 1:
            sizes = size(group[0]["bytes"])
        else:
            sizes = f"{size(group[0]['bytes'])}-{size(group[-1]['bytes'])}"
        ratios = span([r["r"] for r in group], ratio)
        times = (
            f"{span([float(r['time_us']) for r in group], us)} us against "
            f"{span([float(r['best_time_us']) for r in group], us)}"
        )
        at = f" at {sizes}" if sizes else ""
        if which == "behind":
            parts.append(f"**behind{at}** ({ratios}: {times})")
        elif which == "parity":
            parts.append(f"at parity{at} ({ratios}: {times})")
        else:
            parts.append(f"ahead{at} ({ratios})")
    sentence = "; ".join(parts)
    lead = len(sentence) - len(sentence.lstrip("*"))
    return sentence[:lead] + sentence[lead].upper() + sentence[lead + 1 :] + "."


def load(name):
    """A run's command, its table's lines and its rows (None if it was not run)."""
    txt, rows_csv = OUT / f"{name}.txt", OUT / f"{name}.csv"
    if not txt.exists() or not rows_csv.exists():
        return None
    lines = txt.read_text().splitlines()
    command = lines[0].removeprefix("$ ")
    body = [
        line for line in lines[1:]
        if (line.startswith("#") and not line.startswith("###") and not line.startswith("# measuring"))
        or re.match(r"^ +\d", line)
    ]
    rows = list(csv.DictReader(open(rows_csv)))
    # The ratio as the table prints it (from unrounded times; the CSV's MPI times are rounded).
    printed = {}
    for line in body:
        fields = line.split()
        if fields and fields[0].isdigit():
            ratios = [f for f in fields if re.fullmatch(r"\d+\.\d+x", f)]
            if ratios:
                printed[fields[0]] = float(ratios[-1][:-1])
    for row in rows:
        row["r"] = printed.get(row["bytes"]) or float(row["best_time_us"]) / float(row["time_us"])
    return command, body, rows


def brief(rows):
    """The summary table's cell: the sizes behind and at parity, and the range of the ratio."""
    if not rows:
        return "not run"
    every = span([r["r"] for r in rows], ratio)
    behind = [r for r in rows if kind(r) == "behind"]
    parity = [r for r in rows if kind(r) == "parity"]
    if rows[0]["bytes"] == "0":  # barrier: one row, no size
        verdict = "**behind**" if behind else kind(rows[0])
        return f"{verdict}, {every} ({float(rows[0]['time_us']):.2f} against {float(rows[0]['best_time_us']):.2f} us)"
    sizes = lambda group: ", ".join(size(r["bytes"]) for r in group)
    parts = []
    if behind:
        parts.append(f"**behind at {sizes(behind)}** ({span([r['r'] for r in behind], ratio)})")
    if parity:
        parts.append(f"parity at {sizes(parity)} ({span([r['r'] for r in parity], ratio)})")
    if not parts:
        return f"ahead everywhere, {every}"
    ahead = [r["r"] for r in rows if kind(r) == "ahead"]
    return "; ".join(parts) + (f"; ahead at the other sizes ({span(ahead, ratio)})" if ahead else "")


def summary():
    """The table "Where pld stands": a row per collective, a column per rank count."""
    lines = ["| collective | 2 ranks | 4 ranks | 8 ranks (8 B-8 MiB) |", "|---|---|---|---|"]
    for coll in COLLECTIVES:
        cells = []
        for n in (2, 4, 8):
            loaded = load(table_name(coll, n))
            cells.append(brief(loaded[2]) if loaded else "not run")
        lines.append(f"| {coll} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table_64m():
    """The 64 MiB table: each collective's one-size run at 2 and 4 ranks, a row each."""
    lines = [
        "| collective | ranks | pld (us) | best MPI (us) | ratio | fastest MPI | #wrong |",
        "|---|---|---|---|---|---|---|",
    ]
    for coll in COLLECTIVES:
        for n in (2, 4):
            loaded = load(f"{coll}_n{n}_64M")
            if not loaded:
                continue
            for row in loaded[2]:
                lines.append(
                    f"| {coll} | {n} | {float(row['time_us']):.0f} | {float(row['best_time_us']):.0f} | "
                    f"{ratio(row['r'])} | {row['fastest']} | {wrong(row)} |"
                )
    return "\n".join(lines)


def between(doc, begin, end, text):
    """`doc` with the text between the markers `begin` and `end` replaced by `text`."""
    first, last = doc.index(begin) + len(begin), doc.index(end)
    return doc[:first] + "\n" + text + "\n" + doc[last:]


def table(name, title, why):
    loaded = load(name)
    if not loaded:
        return None
    command, body, rows = loaded
    wrong_elements = sum(map(wrong, rows))
    note = where(rows)
    if wrong_elements:
        note += f" **{wrong_elements} wrong elements.**"
    if why.get(name):
        note += " " + why[name]
    return "\n".join([
        f"### {title}",
        "",
        f"`{command}` (gated). CSV and SVG: `docs/perf/mpis/{name}.csv|svg`.",
        "",
        "```",
        *body,
        "```",
        "",
        note,
        "",
        f"![{title}](perf/mpis/{name}.svg)",
        "",
    ])


def main():
    why = {}
    for line in (OUT / "why.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, text = line.partition(":")
            why[key.strip()] = text.strip()
    parts = [
        HEADING,
        "",
        "Written by `python3 docs/perf/mpis_section.py` from the runs of `docs/perf/run_mpis.sh` (the",
        "tables, CSV and SVG in `docs/perf/mpis/`) and the reasons in `docs/perf/mpis/why.txt`. Each",
        "table's first line is computed from its CSV: the ratio is the best MPI's time over pld's,",
        "below 0.97x is behind, 0.97x-1.03x parity (the noise of these runs), above ahead. At 8",
        "ranks every collective runs a ladder of its own (8 B to 8 MiB in x16 steps), and all_reduce",
        "and broadcast also the issue's two sizes, 8 B and 128 KiB.",
        "",
    ]
    for n in (2, 4, 8):
        for coll in COLLECTIVES:
            section = table(table_name(coll, n), f"{coll}, {n} ranks", why)
            if section:
                parts.append(section)
    for coll in ("all_reduce", "broadcast"):
        section = table(f"{coll}_n8", f"{coll}, 8 ranks, 8 B and 128 KiB", why)
        if section:
            parts.append(section)
    doc = DOC.read_text()
    doc = between(doc, "<!-- summary: docs/perf/mpis_section.py -->", "<!-- end of summary -->", summary())
    doc = between(doc, "<!-- 64 MiB: docs/perf/mpis_section.py -->", "<!-- end of 64 MiB -->", table_64m())
    start = doc.index(HEADING)
    end = doc.find("\n## ", start + len(HEADING))
    tail = doc[end + 1:] if end >= 0 else ""
    DOC.write_text(doc[:start] + "\n".join(parts).rstrip("\n") + "\n" + ("\n" + tail if tail else ""))


if __name__ == "__main__":
    main()
