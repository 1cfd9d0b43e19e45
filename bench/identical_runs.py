#!/usr/bin/env python3
"""bench/identical_runs.py — which identical re-run found each determinism
and nondeterminism finding in kcheck reports kept as archives.

  python3 bench/identical_runs.py [ARCHIVE_OR_DIR ...]

Reads every report (*.jsonl) inside the .tgz / .tar.gz archives given
(nested archives too; default: every archive under test/gpu/results and
bench/results) and counts the determinism and nondeterminism violations by
evidence.runs, the identical run that first differed. For each finding not
made by the first run it prints the kernel, the archive and what the other
gates of the same check said: the measure behind determinism_runs'
default (docs/performance.md, "What a check costs, and its floor").
"""
import collections
import glob
import io
import json
import os
import sys
import tarfile

GATES = ("determinism", "nondeterminism")


def reports(tar, name):
    """(archive name, report records) for each report inside tar."""
    for m in tar.getmembers():
        if not m.isfile():
            continue
        try:
            data = tar.extractfile(m).read()
        except (OSError, tarfile.TarError):
            continue
        if m.name.endswith((".tar.gz", ".tgz")):
            try:
                yield from reports(tarfile.open(fileobj=io.BytesIO(data)), name + ":" + m.name)
            except tarfile.TarError:
                pass
        elif m.name.endswith(".jsonl"):
            recs = []
            for line in data.splitlines():
                if b'"violation"' in line or b'"check"' in line:
                    try:
                        recs.append(json.loads(line))
                    except ValueError:
                        pass
            yield name + ":" + m.name, recs


def main(args):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    if not args:
        args = [os.path.join(root, "test/gpu/results"), os.path.join(root, "bench/results")]
    archives = []
    for a in args:
        if os.path.isdir(a):
            archives += sorted(glob.glob(os.path.join(a, "**", "*.tgz"), recursive=True))
            archives += sorted(glob.glob(os.path.join(a, "**", "*.tar.gz"), recursive=True))
        else:
            archives.append(a)
    by_run = collections.Counter()
    later = []
    files = 0
    for path in archives:
        try:
            tar = tarfile.open(path)
        except (OSError, tarfile.TarError) as e:
            print(f"skipped {path}: {e}", file=sys.stderr)
            continue
        for name, recs in reports(tar, os.path.relpath(path, root)):
            files += 1
            for r in recs:
                if r.get("type") != "violation" or r.get("gate") not in GATES:
                    continue
                run = (r.get("evidence") or {}).get("runs")
                by_run[(r["gate"], run)] += 1
                if run == 1:
                    continue
                others = sorted(v.get("gate") for v in recs if v.get("type") == "violation"
                                and v.get("launch") == r.get("launch") and v is not r)
                later.append((r["gate"], run, r.get("kernel_name", "?"), name, others))
    print(f"{files} reports in {len(archives)} archives")
    for (gate, run), n in sorted(by_run.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        print(f"{gate}: {n} found by identical run {run}")
    for gate, run, kernel, name, others in later:
        print(f"  {gate} at run {run}: {kernel[:60]} ({name}); same check also: "
              f"{', '.join(others) or 'nothing'}")


if __name__ == "__main__":
    main(sys.argv[1:])
