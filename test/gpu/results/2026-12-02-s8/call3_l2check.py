import glob, json, statistics, sys
src = open("bench/targets_table.py").read()
ns = {}
exec(src[src.index("L2_ASSUMED"):src.index("# the default runs' checks against their own floors")], ns)
recs = [json.loads(l) for f in glob.glob(sys.argv[1] + ".*.jsonl") for l in open(f)]
own = [r for r in recs if r.get("type") == "summary"][0]["own_kernels"]
ck = [r for r in recs if r.get("type") == "check"]
lb = sorted(x for x in (ns["device_lower_bound"](c, own["l2_bytes"]) for c in ck) if x is not None)
print("own_kernels", json.dumps(own))
print("checks", len(ck), "device work over floor: median %.2f" % lb[len(lb) // 2],
      "cost less wait over floor: median %.2f" % statistics.median((c["cost_ms"] - c["wait_ms"]) / c["floor_ms"] for c in ck if c.get("floor_ms")))
